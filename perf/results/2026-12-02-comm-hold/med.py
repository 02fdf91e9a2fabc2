import sys,statistics as S
f=sys.argv[1]; vs=sys.argv[2].split(); 
rows={}
for l in open(f):
    p=l.split()
    if len(p)<4: continue
    rtt=int(p[1]); v=p[3]; vals=[float(x) for x in p[4:]]
    if not vals: continue
    ph='shared' if rtt<150 else ('slow' if rtt>300 else 'mid')
    rows.setdefault((ph,v),[]).append(vals)
for ph in ['shared','mid','slow','all']:
    for v in vs:
        rs=[r for (p,vv),x in rows.items() if (p==ph or ph=='all') and vv==v for r in x]
        if not rs: continue
        n=len(rs[0]); print(ph,len(rs),v,' '.join('%.3f'%S.median(r[i] for r in rs if len(r)>i) for i in range(n)))
