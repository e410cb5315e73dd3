"""Policy experiments beyond cache_sim (LEARNED.md, "On a trained model, recency beats frequency"):
LRU, segmented LRU and ARC on a recorded trace (tests/bench/trained_trace.sh with
WARP_TRACE_OUT=FILE) and on Zipf traces like cache_sim --zipf. A sketch for choosing the next
runtime policy, not the runtime: `/usr/bin/python3 tests/bench/policy_experiments.py TRACE`."""
import sys, random
from collections import OrderedDict
def load(path):
    acc=[]
    for line in open(path):
        if line.startswith('#') or not line.strip(): continue
        p,l,e=line.split()
        for x in e.split(','): acc.append((int(l),int(x)))
    return acc
def zipf(experts,layers,topk,tokens,s,seed=1):
    r=random.Random(seed); perm=[r.sample(range(experts),experts) for _ in range(layers)]
    w=[1/(i+1)**s for i in range(experts)]; acc=[]
    for t in range(tokens):
        for l in range(layers):
            chosen=set()
            while len(chosen)<topk:
                x=r.choices(range(experts),w)[0]
                if x not in chosen: chosen.add(x); acc.append((l,perm[l][x]))
    return acc
def lru(acc,cap):
    c=OrderedDict(); h=0
    for k in acc:
        if k in c: h+=1; c.move_to_end(k)
        else:
            if len(c)>=cap: c.popitem(last=False)
            c[k]=1
    return h/len(acc)
def slru(acc,cap,frac):
    prot_cap=max(1,int(cap*frac)); prob=OrderedDict(); prot=OrderedDict(); h=0
    for k in acc:
        if k in prot: h+=1; prot.move_to_end(k); continue
        if k in prob:
            h+=1; del prob[k]; prot[k]=1
            if len(prot)>prot_cap:
                d,_=prot.popitem(last=False); prob[d]=1
            continue
        if len(prob)+len(prot)>=cap:
            if prob: prob.popitem(last=False)
            else: prot.popitem(last=False)
        prob[k]=1
    return h/len(acc)
traces={'trained':load(sys.argv[1]),'zipf384':zipf(384,4,8,2000,1.0),'zipf64':zipf(64,4,8,2000,1.0)}
for name,acc in traces.items():
    n=len(set(acc))
    for f in [0.05,0.1,0.18,0.25,0.5]:
        cap=max(1,int(n*f))
        print(name, cap, f"LRU {lru(acc,cap):.3f}", " ".join(f"SLRU{p} {slru(acc,cap,p):.3f}" for p in (0.5,0.8)))
def arc(acc,c):
    T1=OrderedDict();T2=OrderedDict();B1=OrderedDict();B2=OrderedDict();p=0;h=0
    def replace(k):
        nonlocal p
        if T1 and (len(T1)>p or (k in B2 and len(T1)==p)):
            x,_=T1.popitem(last=False); B1[x]=1
        else:
            x,_=T2.popitem(last=False); B2[x]=1
    for k in acc:
        if k in T1: h+=1; del T1[k]; T2[k]=1; continue
        if k in T2: h+=1; T2.move_to_end(k); continue
        if k in B1:
            p=min(c,p+max(len(B2)//max(len(B1),1),1)); replace(k); del B1[k]; T2[k]=1; continue
        if k in B2:
            p=max(0,p-max(len(B1)//max(len(B2),1),1)); replace(k); del B2[k]; T2[k]=1; continue
        if len(T1)+len(B1)==c:
            if len(T1)<c: B1.popitem(last=False); replace(k)
            else: T1.popitem(last=False)
        elif len(T1)+len(B1)<c and len(T1)+len(T2)+len(B1)+len(B2)>=c:
            if len(T1)+len(T2)+len(B1)+len(B2)==2*c: B2.popitem(last=False)
            replace(k)
        T1[k]=1
    return h/len(acc)
print("ARC")
for name,acc in traces.items():
    n=len(set(acc))
    for f in [0.05,0.1,0.18,0.25,0.5]:
        cap=max(1,int(n*f)); print(name,cap,f"LRU {lru(acc,cap):.3f} ARC {arc(acc,cap):.3f}")
