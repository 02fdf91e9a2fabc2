# pair.py FILE A B [thr]: medians of A and B per phase, and the median of per-round ratios B/A
import collections,statistics,sys
f,a,b=sys.argv[1:4]; thr=int(sys.argv[4]) if len(sys.argv)>4 else 300
rounds=[];cur={}
for l in open(f):
    p=l.split()
    if len(p)<5: continue
    if p[3] in cur: rounds.append(cur); cur={}
    cur[p[3]]=(int(p[1]),[float(x) for x in p[4:]])
rounds.append(cur)
for ph in ('all','shared','slow'):
    rs=[r for r in rounds if a in r and b in r and (ph=='all' or (ph=='slow')==(r[a][0]>thr))]
    if not rs: continue
    n=min(len(r[a][1]) for r in rs)
    for v in sorted({k for r in rs for k in r}):
        vals=[r[v][1] for r in rs if v in r]
        print(ph,len(rs),v.ljust(6),' '.join('%8.1f'%statistics.median(x[i] for x in vals) for i in range(n)))
    print(ph,len(rs),(b+'/'+a).ljust(6),' '.join('%8.2f'%statistics.median(r[b][1][i]/r[a][1][i] for r in rs) for i in range(n)))
