# best.py FILE: per size, the medians of base, nnew, ompi, mpich; nnew/base per-round median; best peer time / nnew time
import statistics,sys
rounds=[];cur={}
for l in open(sys.argv[1]):
    p=l.split()
    if len(p)<5: continue
    if p[3] in cur: rounds.append(cur); cur={}
    cur[p[3]]=[float(x) for x in p[4:]]
rounds.append(cur)
rs=[r for r in rounds if all(k in r for k in ('base','nnew','ompi','mpich'))]
n=min(len(r[k]) for r in rs for k in r)
med=lambda k,i: statistics.median(r[k][i] for r in rs)
sizes=['16','64','256','1K','4K','16K','64K','256K','1M','4M','16M']
print(len(rs),'rounds')
print('| | '+' | '.join(sizes[:n])+' |')
print('|---|'+'---:|'*n)
for k in ('base','nnew','ompi','mpich'):
    print('| %s | '%k+' | '.join('%.1f'%med(k,i) for i in range(n))+' |')
print('| new / base | '+' | '.join('%.2f'%statistics.median(r['nnew'][i]/r['base'][i] for r in rs) for i in range(n))+' |')
print('| best peer / new | '+' | '.join('%.2f'%(min(med('ompi',i),med('mpich',i))/med('nnew',i)) for i in range(n))+' |')
print('| best peer / base | '+' | '.join('%.2f'%(min(med('ompi',i),med('mpich',i))/med('base',i)) for i in range(n))+' |')
