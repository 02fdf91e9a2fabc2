import statistics, sys
names=["rtt","old","new","gnu2","api","api_gnu2"]
rows=[l.split()[1:] for l in open(sys.argv[1]) if len(l.split())==7 and not l.startswith('#')]
cols=list(zip(*[[float(x) for x in r] for r in rows]))
def qs(v): v=sorted(v); return "%.3f (%.3f-%.3f)" % (statistics.median(v), v[len(v)//4], v[3*len(v)//4])
print(len(rows),"rounds; medians:", " ".join("%s %.3f" % (n, statistics.median(c)) for n,c in zip(names,cols)))
for a,b in [(1,2),(2,3),(1,4),(2,4),(3,5),(4,5)]:
    print("%s/%s" % (names[a],names[b]), qs([x/y for x,y in zip(cols[a],cols[b])]))
sh=[c for c in cols[0]]; 
