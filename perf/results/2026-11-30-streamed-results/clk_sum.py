import sys, statistics as st, collections as co
d = co.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split('|')
    if len(f) < 3: continue
    a = f[0].split(); r, c, b, p0 = a[0], a[1], a[2], int(a[3])
    t = [float(x) for x in f[1].split()]
    p1 = int(f[2])
    if len(t) != 4: continue
    ph = 'shared' if p0 < 300 and p1 < 300 else ('apart' if p0 > 300 and p1 > 300 else 'mixed')
    d[(c, ph, b)].append(t)
for c in ['sendrecv','all_reduce','reduce','all_gather','broadcast','alltoall']:
    for ph in ['shared','apart']:
        o, m = d.get((c,ph,'o_'),[]), d.get((c,ph,'m_'),[])
        if not o or not m: continue
        mo = [st.median(x[i] for x in o) for i in range(4)]
        mm = [st.median(x[i] for x in m) for i in range(4)]
        print(f"{c:11s} {ph:6s} n={len(o)}/{len(m)} old " + " ".join(f"{x:8.0f}" for x in mo) + " | median-clock " + " ".join(f"{x:8.0f}" for x in mm) + " | old/new " + " ".join(f"{a/b:.2f}" for a,b in zip(mo,mm)))
