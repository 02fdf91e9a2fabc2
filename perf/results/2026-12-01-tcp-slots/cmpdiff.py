import json,statistics,sys,collections
def load(d,c):
    j=json.load(open(f'{d}/2026-12-01-vm-{c}.json'))
    t=collections.defaultdict(lambda: collections.defaultdict(list))
    for run in j['runs']:
        if run['transport']!='tcp': continue
        for x in run['data']['results']:
            r=x.get('out_of_place') or x.get('in_place')
            t[run['library']][x['size']].append(r['time'])
    return t
for c in ['all_reduce','broadcast','reduce','reduce_scatter','all_gather','alltoall','sendrecv']:
    v=load('/tmp/cmpv',c); b=load('/tmp/cmpb',c)
    print('==',c, ' size: tutti2m/best(v) tutti512k/best(b)  [time ratio best/tutti]')
    out=[]
    for s in sorted(v['tutti']):
        if s<65536: continue
        def r(t):
            tt=statistics.median(t['tutti'][s]); bp=min(statistics.median(t[p][s]) for p in ('ompi','mpich'))
            return bp/tt
        out.append(f"{s>>10}K:{r(v):.2f}/{r(b):.2f}")
    print(' '.join(out))
