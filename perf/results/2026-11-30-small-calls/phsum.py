import sys, statistics as st, collections
rows=collections.defaultdict(list)
for l in open(sys.argv[1]):
    f=l.split()
    if len(f)<5: continue
    rtt=int(f[1]); v=f[3]; vals=[float(x) for x in f[4:]]
    ph='shared' if rtt<150 else ('slow' if rtt>300 else 'mid')
    rows[(ph,v)].append(vals)
for k in sorted(rows):
    r=rows[k]; n=len(r); m=len(r[0])
    print(k[0], k[1], n, ' '.join('%.4f'%st.median(x[i] for x in r if len(x)>i) for i in range(m)))
