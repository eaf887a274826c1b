import numpy as np
from scipy import stats, special
def wilson(x,n,a=0.05):
    z=stats.norm.ppf(1-a/2); p=x/n
    c=(p+z*z/(2*n))/(1+z*z/n); h=z*np.sqrt(p*(1-p)/n+z*z/(4*n*n))/(1+z*z/n)
    return (0.0 if x==0 else c-h, 1.0 if x==n else c+h)
def newcombe(xc,nc,xt,nt,a=0.05):
    lc,uc=wilson(xc,nc,a); lt,ut=wilson(xt,nt,a); pc=xc/nc; pt=xt/nt; d=pt-pc
    return (d-np.sqrt((pt-lt)**2+(uc-pc)**2), d+np.sqrt((ut-pt)**2+(pc-lc)**2))
print('wilson 8/10', wilson(8,10)); print('wilson 0/10', wilson(0,10)); print('wilson 3/7 a=.01', wilson(3,7,0.01))
print('newcombe 0/16 vs 17/17', newcombe(0,16,17,17)); print('newcombe 5/20 vs 12/25', newcombe(5,20,12,25))
C=np.array([(3,5),(0,4),(6,6),(2,3),(1,5),(4,4),(0,2),(5,6)],float)
T=np.array([(4,4),(5,6),(3,3),(2,5),(6,6),(1,2),(3,4)],float)
def arm(a):
    s,n=a[:,0],a[:,1]; K=len(s); r=s.sum()/n.sum()
    V=(np.var(s,ddof=1)-2*r*np.cov(s,n,ddof=1)[0,1]+r*r*np.var(n,ddof=1))/(K*n.mean()**2); return r,V,K
rc,Vc,Kc=arm(C); rt,Vt,Kt=arm(T); d=rt-rc; se=np.sqrt(Vc+Vt); z=stats.norm.ppf(0.975)
print('delta rc Vc', repr(rc), repr(Vc)); print('delta rt Vt', repr(rt), repr(Vt))
print('fixed d se ci p', repr(d), repr(se), repr(d-z*se), repr(d+z*se), repr(2*stats.norm.sf(abs(d)/se)))
a=0.05; Ks=10; rho2=(2*np.log(1/a)+np.log(1+2*np.log(1/a)))/Ks; c=rho2*(Kc+Kt); V=Vc+Vt
p=min(1,np.sqrt(1+c)*np.exp(-c*(d*d/V)/(2*(1+c)))); h=np.sqrt(V*(1+c)/c*np.log((1+c)/a**2))
print('seq K*=10 rho2 p lo hi', repr(rho2), repr(p), repr(d-h), repr(d+h))
# binary sequential 12/30 vs 20/30, K*=200
def pv(x,K): pt=(x+1)/(K+2); return pt*(1-pt)/K
Ks=200; rho2=(2*np.log(1/a)+np.log(1+2*np.log(1/a)))/Ks; V=pv(12,30)+pv(20,30); d=20/30-12/30; c=rho2*60
p=min(1,np.sqrt(1+c)*np.exp(-c*(d*d/V)/(2*(1+c)))); h=np.sqrt(V*(1+c)/c*np.log((1+c)/a**2))
print('seqbin rho2 p lo hi se', repr(rho2), repr(p), repr(d-h), repr(d+h), repr(np.sqrt(V)))
# post-stratified: stratum 1 = C,T; stratum 2 = C2,T2 ; stratum 3 skipped (treatment 1 unit)
C2=np.array([(1,3),(2,2),(0,3),(1,1)],float); T2=np.array([(2,3),(3,3),(1,2),(2,2),(0,1)],float)
r2c,V2c,K2c=arm(C2); r2t,V2t,K2t=arm(T2)
K=Kc+Kt+K2c+K2t; w1=(Kc+Kt)/K; w2=(K2c+K2t)/K
dps=w1*(rt-rc)+w2*(r2t-r2c); Vps=w1**2*(Vc+Vt)+w2**2*(V2c+V2t); se=np.sqrt(Vps)
print('ps d se lo hi p', repr(dps), repr(se), repr(dps-z*se), repr(dps+z*se), repr(2*stats.norm.sf(abs(dps)/se)))
# mean sums: scores
sc=np.array([0.2,0.9,0.4,0.7,0.5]); st=np.array([0.8,0.6,0.95,0.7,0.9,0.85])
d=st.mean()-sc.mean(); se=np.sqrt(np.var(sc,ddof=1)/5+np.var(st,ddof=1)/6)
print('means d se p', repr(d), repr(se), repr(2*stats.norm.sf(abs(d)/se)), 'sum/ss', sc.sum(), (sc**2).sum(), st.sum(), (st**2).sum())
# sequential SRM
for o,w,A in [([30,0],[1,1],10),([520,480],[1,1],10),([60,25,15],[2,1,1],10),([5000,5150],[1,1],10)]:
    w=np.array(w,float)/sum(w); o=np.array(o,float); n=o.sum()
    lb=special.gammaln(A)-special.gammaln(A+n)+np.sum(special.gammaln(A*w+o)-special.gammaln(A*w))-np.sum(o*np.log(w))
    print('seqsrm', list(o), repr(lb), repr(min(1,np.exp(-lb))))
