import collections,statistics,sys
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    p=l.split()
    if len(p)<5: continue
    ph='slow' if int(p[1])>300 else 'shared'
    d[(ph,p[3])].append([float(x) for x in p[4:]])
for k,v in sorted(d.items()):
    n=min(len(x) for x in v)
    print(k,len(v),' '.join('%.0f'%statistics.median(x[i] for x in v) for i in range(n)))
