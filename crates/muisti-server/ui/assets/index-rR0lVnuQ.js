var le,v,Ze,U,Pe,Xe,et,pe,ee,J,tt,we,he,fe,ae={},re=[],vt=/acit|ex(?:s|g|n|p|$)|rph|grid|ows|mnc|ntw|ine[ch]|zoo|^ord|itera/i,ce=Array.isArray;function M(t,e){for(var n in e)t[n]=e[n];return t}function Se(t){t&&t.parentNode&&t.parentNode.removeChild(t)}function nt(t,e,n){var o,a,r,s={};for(r in e)r=="key"?o=e[r]:r=="ref"?a=e[r]:s[r]=e[r];if(arguments.length>2&&(s.children=arguments.length>3?le.call(arguments,2):n),typeof t=="function"&&t.defaultProps!=null)for(r in t.defaultProps)s[r]===void 0&&(s[r]=t.defaultProps[r]);return te(t,s,o,a,null)}function te(t,e,n,o,a){var r={type:t,props:e,key:n,ref:o,__k:null,__:null,__b:0,__e:null,__c:null,constructor:void 0,__v:a??++Ze,__i:-1,__u:0};return a==null&&v.vnode!=null&&v.vnode(r),r}function de(t){return t.children}function ne(t,e){this.props=t,this.context=e}function q(t,e){if(e==null)return t.__?q(t.__,t.__i+1):null;for(var n;e<t.__k.length;e++)if((n=t.__k[e])!=null&&n.__e!=null)return n.__e;return typeof t.type=="function"?q(t):null}function kt(t){if(t.__P&&t.__d){var e=t.__v,n=e.__e,o=[],a=[],r=M({},e);r.__v=e.__v+1,v.vnode&&v.vnode(r),xe(t.__P,r,e,t.__n,t.__P.namespaceURI,32&e.__u?[n]:null,o,n??q(e),!!(32&e.__u),a),r.__v=e.__v,r.__.__k[r.__i]=r,it(o,r,a),e.__e=e.__=null,r.__e!=n&&ot(r)}}function ot(t){if((t=t.__)!=null&&t.__c!=null)return t.__e=t.__c.base=null,t.__k.some(function(e){if(e!=null&&e.__e!=null)return t.__e=t.__c.base=e.__e}),ot(t)}function Ae(t){(!t.__d&&(t.__d=!0)&&U.push(t)&&!se.__r++||Pe!=v.debounceRendering)&&((Pe=v.debounceRendering)||Xe)(se)}function se(){try{for(var t,e=1;U.length;)U.length>e&&U.sort(et),t=U.shift(),e=U.length,kt(t)}finally{U.length=se.__r=0}}function at(t,e,n,o,a,r,s,c,_,i,d){var p,l,$,m,k,f,h=o&&o.__k||re,y=e.length;for(_=wt(n,e,h,_,y),p=0;p<y;p++)($=n.__k[p])!=null&&(l=$.__i!=-1&&h[$.__i]||ae,$.__i=p,f=xe(t,$,l,a,r,s,c,_,i,d),m=$.__e,$.ref&&l.ref!=$.ref&&(l.ref&&Ce(l.ref,null,$),d.push($.ref,$.__c||m,$)),k==null&&m!=null&&(k=m),4&$.__u?(_=rt($,_,t),l.__e&&(l.__e=null)):typeof $.type=="function"&&f!==void 0?_=f:m&&(_=m.nextSibling),$.__u&=-7);return n.__e=k,_}function wt(t,e,n,o,a){var r,s,c,_,i,d=n.length,p=d,l=0;for(t.__k=new Array(a),r=0;r<a;r++)(s=e[r])!=null&&typeof s!="boolean"&&typeof s!="function"?(typeof s=="string"||typeof s=="number"||typeof s=="bigint"||s.constructor==String?s=t.__k[r]=te(null,s,null,null,null):ce(s)?s=t.__k[r]=te(de,{children:s},null,null,null):s.constructor===void 0&&s.__b>0?s=t.__k[r]=te(s.type,s.props,s.key,s.ref?s.ref:null,s.__v):t.__k[r]=s,_=r+l,s.__=t,s.__b=t.__b+1,c=null,(i=s.__i=St(s,n,_,p))!=-1&&(p--,(c=n[i])&&(c.__u|=2)),c==null||c.__v==null?(i==-1&&(a>d?l--:a<d&&l++),typeof s.type!="function"&&(s.__u|=4)):i!=_&&(i==_-1?l--:i==_+1?l++:(i>_?l--:l++,s.__u|=4))):t.__k[r]=null;if(p)for(r=0;r<d;r++)(c=n[r])!=null&&(2&c.__u)==0&&(c.__e==o&&(o=q(c)),ct(c,c));return o}function rt(t,e,n){var o,a;if(typeof t.type=="function"){for(o=t.__k,a=0;o&&a<o.length;a++)o[a]&&(o[a].__=t,e=rt(o[a],e,n));return e}t.__e!=e&&(e&&t.type&&!e.parentNode&&(e=q(t)),e=n.insertBefore(t.__e,e||null));do e=e&&e.nextSibling;while(e!=null&&e.nodeType==8);return e}function St(t,e,n,o){var a,r,s,c=t.key,_=t.type,i=e[n],d=i!=null&&(2&i.__u)==0;if(i===null&&c==null||d&&c==i.key&&_==i.type)return n;if(o>(d?1:0)){for(a=n-1,r=n+1;a>=0||r<e.length;)if((i=e[s=a>=0?a--:r++])!=null&&(2&i.__u)==0&&c==i.key&&_==i.type)return s}return-1}function De(t,e,n){e[0]=="-"?t.setProperty(e,n??""):t[e]=n==null?"":typeof n!="number"||vt.test(e)?n:n+"px"}function Z(t,e,n,o,a){var r,s;e:if(e=="style")if(typeof n=="string")t.style.cssText=n;else{if(typeof o=="string"&&(t.style.cssText=o=""),o)for(e in o)n&&e in n||De(t.style,e,"");if(n)for(e in n)o&&n[e]==o[e]||De(t.style,e,n[e])}else if(e[0]=="o"&&e[1]=="n")r=e!=(e=e.replace(tt,"$1")),s=e.toLowerCase(),e=s in t||e=="onFocusOut"||e=="onFocusIn"?s.slice(2):e.slice(2),t.l||(t.l={}),t.l[e+r]=n,n?o?n[J]=o[J]:(n[J]=we,t.addEventListener(e,r?fe:he,r)):t.removeEventListener(e,r?fe:he,r);else{if(a=="http://www.w3.org/2000/svg")e=e.replace(/xlink(H|:h)/,"h").replace(/sName$/,"s");else if(e!="width"&&e!="height"&&e!="href"&&e!="list"&&e!="form"&&e!="tabIndex"&&e!="download"&&e!="rowSpan"&&e!="colSpan"&&e!="role"&&e!="popover"&&e in t)try{t[e]=n??"";break e}catch{}typeof n=="function"||(n==null||n===!1&&e[4]!="-"?t.removeAttribute(e):t.setAttribute(e,e=="popover"&&n==1?"":n))}}function Me(t){return function(e){if(this.l){var n=this.l[e.type+t];if(e[ee]==null)e[ee]=we++;else if(e[ee]<n[J])return;return n(v.event?v.event(e):e)}}}function xe(t,e,n,o,a,r,s,c,_,i){var d,p,l,$,m,k,f,h,y,C,K,j,W,Te,Q,_e,A=e.type;if(e.constructor!==void 0)return null;128&n.__u&&(_=!!(32&n.__u),r=[c=e.__e=n.__e]),(d=v.__b)&&d(e);e:if(typeof A=="function"){p=s.length;try{if(y=e.props,C=A.prototype&&A.prototype.render,K=(d=A.contextType)&&o[d.__c],j=d?K?K.props.value:d.__:o,n.__c?h=(l=e.__c=n.__c).__=l.__E:(C?e.__c=l=new A(y,j):(e.__c=l=new ne(y,j),l.constructor=A,l.render=Ct),K&&K.sub(l),l.state||(l.state={}),l.__n=o,$=l.__d=!0,l.__h=[],l._sb=[]),C&&l.__s==null&&(l.__s=l.state),C&&A.getDerivedStateFromProps!=null&&(l.__s==l.state&&(l.__s=M({},l.__s)),M(l.__s,A.getDerivedStateFromProps(y,l.__s))),m=l.props,k=l.state,l.__v=e,$)C&&A.getDerivedStateFromProps==null&&l.componentWillMount!=null&&l.componentWillMount(),C&&l.componentDidMount!=null&&l.__h.push(l.componentDidMount);else{if(C&&A.getDerivedStateFromProps==null&&y!==m&&l.componentWillReceiveProps!=null&&l.componentWillReceiveProps(y,j),e.__v==n.__v||!l.__e&&l.shouldComponentUpdate!=null&&l.shouldComponentUpdate(y,l.__s,j)===!1){e.__v!=n.__v&&(l.props=y,l.state=l.__s,l.__d=!1),e.__e=n.__e,e.__k=n.__k,e.__k.some(function(F){F&&(F.__=e)}),re.push.apply(l.__h,l._sb),l._sb=[],l.__h.length&&s.push(l),c=q(n);break e}l.componentWillUpdate!=null&&l.componentWillUpdate(y,l.__s,j),C&&l.componentDidUpdate!=null&&l.__h.push(function(){l.componentDidUpdate(m,k,f)})}if(l.context=j,l.props=y,l.__P=t,l.__e=!1,W=v.__r,Te=0,C)l.state=l.__s,l.__d=!1,W&&W(e),d=l.render(l.props,l.state,l.context),re.push.apply(l.__h,l._sb),l._sb=[];else do l.__d=!1,W&&W(e),d=l.render(l.props,l.state,l.context),l.state=l.__s;while(l.__d&&++Te<25);l.state=l.__s,l.getChildContext!=null&&(o=M(M({},o),l.getChildContext())),C&&!$&&l.getSnapshotBeforeUpdate!=null&&(f=l.getSnapshotBeforeUpdate(m,k)),Q=d!=null&&d.type===de&&d.key==null?lt(d.props.children):d,c=at(t,ce(Q)?Q:[Q],e,n,o,a,r,s,c,_,i),l.base=e.__e,e.__u&=-161,l.__h.length&&s.push(l),h&&(l.__E=l.__=null)}catch(F){if(s.length=p,e.__v=null,_||r!=null){if(F.then){for(e.__u|=_?160:128;c&&c.nodeType==8&&c.nextSibling;)c=c.nextSibling;r!=null&&(r[r.indexOf(c)]=null),e.__e=c}else if(r!=null)for(_e=r.length;_e--;)Se(r[_e])}else e.__e=n.__e;e.__k==null&&(e.__k=n.__k||[]),F.then||st(e),v.__e(F,e,n)}}else r==null&&e.__v==n.__v?(e.__k=n.__k,e.__e=n.__e):c=e.__e=xt(n.__e,e,n,o,a,r,s,_,i);return(d=v.diffed)&&d(e),128&e.__u?void 0:c}function st(t){t&&(t.__c&&(t.__c.__e=!0),t.__k&&t.__k.some(st))}function it(t,e,n){for(var o=0;o<n.length;o++)Ce(n[o],n[++o],n[++o]);v.__c&&v.__c(e,t),t.some(function(a){try{t=a.__h,a.__h=[],t.some(function(r){r.call(a)})}catch(r){v.__e(r,a.__v)}})}function lt(t){return typeof t!="object"||t==null||t.__b>0?t:ce(t)?t.map(lt):t.constructor!==void 0?null:M({},t)}function xt(t,e,n,o,a,r,s,c,_){var i,d,p,l,$,m,k,f=n.props||ae,h=e.props,y=e.type;if(y=="svg"?a="http://www.w3.org/2000/svg":y=="math"?a="http://www.w3.org/1998/Math/MathML":a||(a="http://www.w3.org/1999/xhtml"),r!=null){for(i=0;i<r.length;i++)if(($=r[i])&&"setAttribute"in $==!!y&&(y?$.localName==y:$.nodeType==3)){t=$,r[i]=null;break}}if(t==null){if(y==null)return document.createTextNode(h);t=document.createElementNS(a,y,h.is&&h),c&&(v.__m&&v.__m(e,r),c=!1),r=null}if(y==null)f===h||c&&t.data==h||(t.data=h);else{if(r=y=="textarea"&&h.defaultValue!=null?null:r&&le.call(t.childNodes),!c&&r!=null)for(f={},i=0;i<t.attributes.length;i++)f[($=t.attributes[i]).name]=$.value;for(i in f)$=f[i],i=="dangerouslySetInnerHTML"?p=$:i=="children"||i in h||i=="value"&&"defaultValue"in h||i=="checked"&&"defaultChecked"in h||Z(t,i,null,$,a);for(i in h)$=h[i],i=="children"?l=$:i=="dangerouslySetInnerHTML"?d=$:i=="value"?m=$:i=="checked"?k=$:c&&typeof $!="function"||f[i]===$||Z(t,i,$,f[i],a);if(d)c||p&&(d.__html==p.__html||d.__html==t.innerHTML)||(t.innerHTML=d.__html),e.__k=[];else if(p&&(t.innerHTML=""),at(e.type=="template"?t.content:t,ce(l)?l:[l],e,n,o,y=="foreignObject"?"http://www.w3.org/1999/xhtml":a,r,s,r?r[0]:n.__k&&q(n,0),c,_),r!=null)for(i=r.length;i--;)Se(r[i]);c&&y!="textarea"||(i="value",y=="progress"&&m==null?t.removeAttribute("value"):m!=null&&(m!==t[i]||y=="progress"&&!m||y=="option"&&m!=f[i])&&Z(t,i,m,f[i],a),i="checked",k!=null&&k!=t[i]&&Z(t,i,k,f[i],a))}return t}function Ce(t,e,n){try{if(typeof t=="function"){var o=typeof t.__u=="function";o&&t.__u(),o&&e==null||(t.__u=t(e))}else t.current=e}catch(a){v.__e(a,n)}}function ct(t,e,n){var o,a;if(v.unmount&&v.unmount(t),(o=t.ref)&&(o.current&&o.current!=t.__e||Ce(o,null,e)),(o=t.__c)!=null){if(o.componentWillUnmount)try{o.componentWillUnmount()}catch(r){v.__e(r,e)}o.base=o.__P=o.__n=null}if(o=t.__k)for(a=0;a<o.length;a++)o[a]&&ct(o[a],e,n||typeof t.type!="function");n||Se(t.__e),t.__c=t.__=t.__e=void 0}function Ct(t,e,n){return this.constructor(t,n)}function It(t,e,n){var o,a,r,s;e==document&&(e=document.documentElement),v.__&&v.__(t,e),a=(o=!1)?null:e.__k,r=[],s=[],xe(e,t=e.__k=nt(de,null,[t]),a||ae,ae,e.namespaceURI,a?null:e.firstChild?le.call(e.childNodes):null,r,a?a.__e:e.firstChild,o,s),it(r,t,s),t.props.children=null}le=re.slice,v={__e:function(t,e,n,o){for(var a,r,s;e=e.__;)if((a=e.__c)&&!a.__)try{if((r=a.constructor)&&r.getDerivedStateFromError!=null&&(a.setState(r.getDerivedStateFromError(t)),s=a.__d),a.componentDidCatch!=null&&(a.componentDidCatch(t,o||{}),s=a.__d),s)return a.__E=a}catch(c){t=c}throw t}},Ze=0,ne.prototype.setState=function(t,e){var n;n=this.__s!=null&&this.__s!=this.state?this.__s:this.__s=M({},this.state),typeof t=="function"&&(t=t(M({},n),this.props)),t&&M(n,t),t!=null&&this.__v&&(e&&this._sb.push(e),Ae(this))},ne.prototype.forceUpdate=function(t){this.__v&&(this.__e=!0,t&&this.__h.push(t),Ae(this))},ne.prototype.render=de,U=[],Xe=typeof Promise=="function"?Promise.prototype.then.bind(Promise.resolve()):setTimeout,et=function(t,e){return t.__v.__b-e.__v.__b},se.__r=0,pe=Math.random().toString(8),ee="__d"+pe,J="__a"+pe,tt=/(PointerCapture)$|Capture$/i,we=0,he=Me(!1),fe=Me(!0);var V,w,$e,Ue,G=0,dt=[],S=v,je=S.__b,Le=S.__r,Re=S.diffed,Oe=S.__c,qe=S.unmount,He=S.__;function Ie(t,e){S.__h&&S.__h(w,t,G||e),G=0;var n=w.__H||(w.__H={__:[],__h:[]});return t>=n.__.length&&n.__.push({}),n.__[t]}function g(t){return G=1,Nt(_t,t)}function Nt(t,e,n){var o=Ie(V++,2);if(o.t=t,!o.__c&&(o.__=[_t(void 0,e),function(c){var _=o.__N?o.__N[0]:o.__[0],i=o.t(_,c);_!==i&&(o.__N=[i,o.__[1]],o.__c.setState({}))}],o.__c=w,!w.__f)){var a=function(c,_,i){if(!o.__c.__H)return!0;var d=!1,p=o.__c.props!==c;if(o.__c.__H.__.some(function($){if($.__N){d=!0;var m=$.__[0];$.__=$.__N,$.__N=void 0,m!==$.__[0]&&(p=!0)}}),r){var l=r.call(this,c,_,i);return d?l||p:l}return!d||p};w.__f=!0;var r=w.shouldComponentUpdate,s=w.componentWillUpdate;w.componentWillUpdate=function(c,_,i){if(this.__e){var d=r;r=void 0,a(c,_,i),r=d}s&&s.call(this,c,_,i)},w.shouldComponentUpdate=a}return o.__N||o.__}function E(t,e){var n=Ie(V++,3);!S.__s&&ut(n.__H,e)&&(n.__=t,n.u=e,w.__H.__h.push(n))}function Y(t){return G=5,H(function(){return{current:t}},[])}function H(t,e){var n=Ie(V++,7);return ut(n.__H,e)&&(n.__=t(),n.__H=e,n.__h=t),n.__}function Et(t,e){return G=8,H(function(){return t},e)}function Tt(){for(var t;t=dt.shift();){var e=t.__H;if(t.__P&&e)try{e.__h.some(oe),e.__h.some(ye),e.__h=[]}catch(n){e.__h=[],S.__e(n,t.__v)}}}S.__b=function(t){w=null,je&&je(t)},S.__=function(t,e){t&&e.__k&&e.__k.__m&&(t.__m=e.__k.__m),He&&He(t,e)},S.__r=function(t){Le&&Le(t),V=0;var e=(w=t.__c).__H;e&&($e===w?(e.__h=[],w.__h=[],e.__.some(function(n){n.__N&&(n.__=n.__N),n.u=n.__N=void 0})):(e.__h.some(oe),e.__h.some(ye),e.__h=[],V=0)),$e=w},S.diffed=function(t){Re&&Re(t);var e=t.__c;e&&e.__H&&(e.__H.__h.length&&(dt.push(e)!==1&&Ue===S.requestAnimationFrame||((Ue=S.requestAnimationFrame)||Pt)(Tt)),e.__H.__.some(function(n){n.u&&(n.__H=n.u,n.u=void 0)})),$e=w=null},S.__c=function(t,e){e.some(function(n){try{n.__h.some(oe),n.__h=n.__h.filter(function(o){return!o.__||ye(o)})}catch(o){e.some(function(a){a.__h&&(a.__h=[])}),e=[],S.__e(o,n.__v)}}),Oe&&Oe(t,e)},S.unmount=function(t){qe&&qe(t);var e,n=t.__c;n&&n.__H&&(n.__H.__.some(function(o){try{oe(o)}catch(a){e=a}}),n.__H=void 0,e&&S.__e(e,n.__v))};var Fe=typeof requestAnimationFrame=="function";function Pt(t){var e,n=function(){clearTimeout(o),Fe&&cancelAnimationFrame(e),setTimeout(t)},o=setTimeout(n,35);Fe&&(e=requestAnimationFrame(n))}function oe(t){var e=w,n=t.__c;typeof n=="function"&&(t.__c=void 0,n()),w=e}function ye(t){var e=w;t.__c=t.__(),w=e}function ut(t,e){return!t||t.length!==e.length||e.some(function(n,o){return n!==t[o]})}function _t(t,e){return typeof e=="function"?e(t):e}const be="muisti.key";class Be extends Error{constructor(e,n,o){super(o),this.status=e,this.code=n}}function pt(){return sessionStorage.getItem(be)||""}function $t(t){t?sessionStorage.setItem(be,t):sessionStorage.removeItem(be)}const ge=new Set;function At(t){return ge.add(t),()=>ge.delete(t)}function Dt(t){const e=new URLSearchParams;for(const[o,a]of Object.entries(t||{}))a==null||a===""||(Array.isArray(a)?a.filter(r=>r!=="").forEach(r=>e.append(o,r)):e.append(o,String(a)));const n=e.toString();return n?`?${n}`:""}async function ue(t,e,{params:n,body:o,headers:a}={}){const r={Accept:"application/json",...a||{}},s=pt();s&&(r.Authorization=`Bearer ${s}`),o!==void 0&&(r["Content-Type"]="application/json");let c;try{c=await fetch(e+Dt(n),{method:t,headers:r,body:o===void 0?void 0:JSON.stringify(o)})}catch(d){throw new Be(0,"unreachable",`the server could not be reached (${d.message})`)}if(c.status===204)return null;const _=await c.text();let i=null;try{i=_?JSON.parse(_):null}catch{i=null}if(!c.ok){const d=i&&i.error,p=new Be(c.status,d&&d.code||"error",d&&d.message||`${c.status} ${c.statusText}`);throw c.status===401&&ge.forEach(l=>l(p)),p}return i}const I=(t,e)=>ue("GET",t,{params:e}),B=(t,e,n)=>ue("POST",t,{body:e??{},params:n}),Mt=(t,e,n)=>ue("PATCH",t,{body:e,headers:n}),Ne=(t,e)=>ue("DELETE",t,{params:e}),ve="/ui";function ze(){return{page:(location.pathname.startsWith(ve)?location.pathname.slice(ve.length):"").replace(/^\/+|\/+$/g,"")||"memories",params:new URLSearchParams(location.search)}}const ke=new Set;function T(t,e={},{replace:n=!1}={}){const o=new URLSearchParams;for(const[s,c]of Object.entries(e))c==null||c===""||c===!1||(Array.isArray(c)?c.forEach(_=>_!==""&&o.append(s,_)):o.append(s,String(c)));const a=o.toString(),r=`${ve}/${t}${a?`?${a}`:""}`;r!==location.pathname+location.search&&(n?history.replaceState(null,"",r):history.pushState(null,"",r),ke.forEach(s=>s()))}function Ut(){const[t,e]=g(ze);return E(()=>{const n=()=>e(ze());return ke.add(n),addEventListener("popstate",n),()=>{ke.delete(n),removeEventListener("popstate",n)}},[]),t}function L(t,e=[]){const n={};for(const o of new Set(t.keys()))n[o]=e.includes(o)?t.getAll(o):t.get(o);return n}const jt=(function(){const e=typeof document<"u"&&document.createElement("link").relList;return e&&e.supports&&e.supports("modulepreload")?"modulepreload":"preload"})(),Lt=function(t){return"/ui/"+t},Ke={},Rt=function(e,n,o){let a=Promise.resolve();if(n&&n.length>0){let i=function(d){return Promise.all(d.map(p=>Promise.resolve(p).then(l=>({status:"fulfilled",value:l}),l=>({status:"rejected",reason:l}))))};var s=i;document.getElementsByTagName("link");const c=document.querySelector("meta[property=csp-nonce]"),_=c?.nonce||c?.getAttribute("nonce");a=i(n.map(d=>{if(d=Lt(d),d in Ke)return;Ke[d]=!0;const p=d.endsWith(".css"),l=p?'[rel="stylesheet"]':"";if(document.querySelector(`link[href="${d}"]${l}`))return;const $=document.createElement("link");if($.rel=p?"stylesheet":jt,p||($.as="script"),$.crossOrigin="",$.href=d,_&&$.setAttribute("nonce",_),document.head.appendChild($),p)return new Promise((m,k)=>{$.addEventListener("load",m),$.addEventListener("error",()=>k(new Error(`Unable to preload CSS for ${d}`)))})}))}function r(c){const _=new Event("vite:preloadError",{cancelable:!0});if(_.payload=c,window.dispatchEvent(_),!_.defaultPrevented)throw c}return a.then(c=>{for(const _ of c||[])_.status==="rejected"&&r(_.reason);return e().catch(r)})};var mt=function(t,e,n,o){var a;e[0]=0;for(var r=1;r<e.length;r++){var s=e[r++],c=e[r]?(e[0]|=s?1:2,n[e[r++]]):e[++r];s===3?o[0]=c:s===4?o[1]=Object.assign(o[1]||{},c):s===5?(o[1]=o[1]||{})[e[++r]]=c:s===6?o[1][e[++r]]+=c+"":s?(a=t.apply(c,mt(t,c,n,["",null])),o.push(a),c[0]?e[0]|=2:(e[r-2]=0,e[r]=a)):o.push(c)}return o},We=new Map;function Ot(t){var e=We.get(this);return e||(e=new Map,We.set(this,e)),(e=mt(this,e.get(t)||(e.set(t,e=(function(n){for(var o,a,r=1,s="",c="",_=[0],i=function(l){r===1&&(l||(s=s.replace(/^\s*\n\s*|\s*\n\s*$/g,"")))?_.push(0,l,s):r===3&&(l||s)?(_.push(3,l,s),r=2):r===2&&s==="..."&&l?_.push(4,l,0):r===2&&s&&!l?_.push(5,0,!0,s):r>=5&&((s||!l&&r===5)&&(_.push(r,0,s,a),r=6),l&&(_.push(r,l,0,a),r=6)),s=""},d=0;d<n.length;d++){d&&(r===1&&i(),i(d));for(var p=0;p<n[d].length;p++)o=n[d][p],r===1?o==="<"?(i(),_=[_],r=3):s+=o:r===4?s==="--"&&o===">"?(r=1,s=""):s=o+s[0]:c?o===c?c="":s+=o:o==='"'||o==="'"?c=o:o===">"?(i(),r=1):r&&(o==="="?(r=5,a=s,s=""):o==="/"&&(r<5||n[d][p+1]===">")?(i(),r===3&&(_=_[0]),r=_,(_=_[0]).push(2,0,r),r=0):o===" "||o==="	"||o===`
`||o==="\r"?(i(),r=2):s+=o),r===3&&s==="!--"&&(r=4,_=_[0])}return i(),_})(t)),e),arguments,[])).length>1?e:e[0]}const u=Ot.bind(nt),ht=["scratch","short_term","long_term","episodic","declarative"],qt=["active","archived","superseded"],Ht=["fact","preference","rule"];function N(t,e){const[n,o]=g({data:null,error:null,loading:!0}),a=Y(0),r=Et(()=>{const s=++a.current;o(c=>({...c,loading:!0,error:null})),Promise.resolve().then(t).then(c=>s===a.current&&o({data:c,error:null,loading:!1}),c=>s===a.current&&o({data:null,error:c,loading:!1}))},e);return E(r,[r]),{...n,reload:r}}function x({error:t}){if(!t)return null;const e=t.code?u`<code>${t.code}</code> `:"";return u`<div class="error" role="alert">${e}${t.message||String(t)}</div>`}function D({children:t}){return u`<p class="notice" role="status">${t}</p>`}let Ft=0;function ft(t){const e=Y(null);return e.current||(e.current=`${t}-${++Ft}`),e.current}function b({label:t,value:e,onInput:n,type:o="text",placeholder:a,name:r,list:s,...c}){const _=ft(r||"f");return u`<label class="field" for=${_}>
    <span>${t}</span>
    <input id=${_} name=${r} type=${o} value=${e??""} placeholder=${a}
      list=${s} onInput=${i=>n(i.currentTarget.value)} ...${c} />
  </label>`}function R({label:t,value:e,onChange:n,options:o,name:a,any:r="any"}){const s=ft(a||"s");return u`<label class="field" for=${s}>
    <span>${t}</span>
    <select id=${s} name=${a} value=${e??""} onChange=${c=>n(c.currentTarget.value)}>
      ${r!==null&&u`<option value="">${r}</option>`}
      ${o.map(c=>u`<option value=${c}>${c}</option>`)}
    </select>
  </label>`}function Ee(){const[t,e]=g(null),[n,o]=g(null),[a,r]=g(!1),s=(p,l,$="Delete")=>{o(null),e({message:p,action:l,label:$})},c=()=>e(null),_=Y(null);E(()=>{if(!t)return;_.current&&_.current.focus();const p=l=>l.key==="Escape"&&e(null);return document.addEventListener("keydown",p),()=>document.removeEventListener("keydown",p)},[t]);const i=async()=>{r(!0);try{await t.action(),e(null)}catch(p){o(p)}finally{r(!1)}};return[t?u`<div class="backdrop">
        <div class="modal" role="dialog" aria-modal="true" aria-labelledby="confirm-title">
          <h2 id="confirm-title">Are you sure?</h2>
          <p>${t.message}</p>
          <${x} error=${n} />
          <div class="actions">
            <button type="button" onClick=${c} disabled=${a}>Cancel</button>
            <button type="button" class="danger" onClick=${i} disabled=${a} ref=${_}>
              ${t.label}
            </button>
          </div>
        </div>
      </div>`:null,s]}function yt({cursors:t,next:e,onPage:n}){return u`<nav class="pager" aria-label="pages">
    <button type="button" disabled=${!t.length} onClick=${()=>n(t.slice(0,-1))}>
      ← Previous
    </button>
    <span>page ${t.length+1}</span>
    <button type="button" disabled=${!e} onClick=${()=>n([...t,e])}>Next →</button>
  </nav>`}function O(t){return typeof t.content=="string"?t.content:JSON.stringify(t.content)}function P(t){if(!t)return"";const e=new Date(t);return Number.isNaN(e.getTime())?t:e.toISOString().replace("T"," ").slice(0,16)}function z({children:t,kind:e}){return u`<span class=${`badge ${e||""}`}>${t}</span>`}function ie({option:t,label:e,height:n=320,testid:o}){const a=Y(null),r=Y(null),[s,c]=g(null);return E(()=>{let _=!0;return Rt(async()=>{const{draw:i}=await import("./charts-CVBNsewV.js");return{draw:i}},[]).then(({draw:i})=>{!_||!a.current||(r.current=i(a.current,t),a.current.dataset.drawn="true")},i=>c(i)),()=>{_=!1,r.current&&r.current.dispose(),r.current=null}},[]),E(()=>{r.current&&r.current.update(t)},[t]),s?u`<${x} error=${s} />`:u`<div class="chart" ref=${a} role="img" aria-label=${e} data-testid=${o}
    style=${`height:${n}px`}></div>`}const Je=50,Bt=["namespace","user_id","agent_id","session_id","scope","category","tag","state","from","to","q","mode"];function X(t,e){if(!t)return;const n=new Date(`${t}T00:00:00Z`);if(!Number.isNaN(n.getTime()))return e&&n.setUTCDate(n.getUTCDate()+1),n.toISOString()}function zt(t,e){if(t.q){const n={};return t.agent_id&&(n.agent_id=t.agent_id),t.category&&(n.category=t.category),t.scope&&(n.scope=t.scope),t.tag&&t.tag.length&&(n.tags=t.tag),t.from&&(n.created_after=X(t.from)),t.to&&(n.created_before=X(t.to,!0)),B("/v1/recall",{query:t.q,namespace:t.namespace||void 0,user_id:t.user_id||void 0,session_id:t.session_id||void 0,mode:t.mode==="semantic"?"vector":"lexical",limit:Je,filters:n,include_archived:t.state==="archived"}).then(o=>({items:o.hits.map(a=>({...a.memory,_score:a.score}))}))}return I("/v1/memories",{namespace:t.namespace,user_id:t.user_id,agent_id:t.agent_id,session_id:t.session_id,scope:t.scope,category:t.category,tag:t.tag,state:t.state,created_after:X(t.from),created_before:X(t.to,!0),cursor:e,limit:Je})}function Kt({f:t,onApply:e}){const[n,o]=g(t);E(()=>o(t),[JSON.stringify(t)]);const a=s=>c=>o({...n,[s]:c});return u`<form class="filters" onSubmit=${s=>{s.preventDefault(),e(n)}} aria-label="filters">
    <${b} label="Search" name="q" type="search" value=${n.q} onInput=${a("q")}
      placeholder="words or a question" />
    <${R} label="Search by" name="mode" value=${n.mode} onChange=${a("mode")}
      options=${["semantic"]} any="full text" />
    <${b} label="Namespace" name="namespace" value=${n.namespace} onInput=${a("namespace")} placeholder="default" />
    <${b} label="User" name="user_id" value=${n.user_id} onInput=${a("user_id")} />
    <${b} label="Agent" name="agent_id" value=${n.agent_id} onInput=${a("agent_id")} />
    <${b} label="Session" name="session_id" value=${n.session_id} onInput=${a("session_id")} />
    <${R} label="Scope" name="scope" value=${n.scope} onChange=${a("scope")} options=${ht} />
    <${b} label="Category" name="category" value=${n.category} onInput=${a("category")} />
    <${b} label="Tag" name="tag" value=${(n.tag||[]).join(",")}
      onInput=${s=>a("tag")(s.split(",").map(c=>c.trim()).filter(Boolean))} placeholder="a,b" />
    <${R} label="State" name="state" value=${n.state} onChange=${a("state")} options=${qt} />
    <${b} label="Created from" name="from" type="date" value=${n.from} onInput=${a("from")} />
    <${b} label="Created to" name="to" type="date" value=${n.to} onInput=${a("to")} />
    <div class="actions"><button type="submit">Apply</button>
      <button type="button" onClick=${()=>{o({}),e({})}}>Clear</button></div>
  </form>`}function Wt({id:t,f:e,onChanged:n,onClose:o,ask:a}){const r=e.user_id||void 0,s=N(()=>I(`/v1/memories/${t}`,{user_id:r}),[t,r]),c=N(()=>I(`/v1/memories/${t}/history`,{user_id:r}),[t,r]),[_,i]=g(null),[d,p]=g(null),[l,$]=g(!1);if(s.error)return u`<section class="detail" aria-label="memory"><${x} error=${s.error} />
    <button type="button" onClick=${o}>Close</button></section>`;if(!s.data)return u`<section class="detail" aria-label="memory"><p class="loading">Loading…</p></section>`;const m=s.data,k=async h=>{h.preventDefault(),p(null);try{const y={content:_.content,importance:Number(_.importance),tags:_.tags.split(",").map(C=>C.trim()).filter(Boolean),expected_version:m.version,actor:"dashboard"};_.category&&_.category!==m.category&&(y.category=_.category),m.scope==="declarative"&&m.user_id&&(y.user_id=m.user_id),await Mt(`/v1/memories/${t}`,y),i(null),$(!0),s.reload(),c.reload(),n()}catch(y){p(y)}},f=()=>a(`Delete this memory? "${O(m).slice(0,120)}"`,async()=>{await Ne(`/v1/memories/${t}`,{user_id:m.scope==="declarative"?m.user_id:r}),n(),o()});return u`<section class="detail" aria-labelledby="detail-title">
    <div class="row"><h2 id="detail-title">Memory</h2>
      <button type="button" onClick=${o}>Close</button></div>
    ${l&&u`<${D}>Saved.</${D}>`}
    ${_?u`<form onSubmit=${k} class="edit" aria-label="edit memory">
          <label class="field wide" for="edit-content"><span>Content</span>
            <textarea id="edit-content" rows="4" value=${_.content}
              onInput=${h=>i({..._,content:h.currentTarget.value})}></textarea></label>
          <${b} label="Category" name="edit-category" value=${_.category}
            onInput=${h=>i({..._,category:h})} />
          <${b} label="Tags" name="edit-tags" value=${_.tags} onInput=${h=>i({..._,tags:h})} />
          <${b} label="Importance" name="edit-importance" type="number" min="0" max="1" step="0.05"
            value=${_.importance} onInput=${h=>i({..._,importance:h})} />
          <${x} error=${d} />
          <div class="actions"><button type="submit">Save</button>
            <button type="button" onClick=${()=>i(null)}>Cancel</button></div>
        </form>`:u`<p class="content">${O(m)}</p>
        <div class="actions">
          <button type="button" onClick=${()=>{$(!1),i({content:O(m),category:m.category,tags:(m.tags||[]).join(", "),importance:m.importance})}}>Edit</button>
          <button type="button" class="danger" onClick=${f}>Delete</button>
        </div>`}
    <dl class="fields">
      ${[["id",m.id],["namespace",m.namespace],["scope",m.scope],["category",m.category],["state",m.state],["user",m.user_id],["agent",m.agent_id],["session",m.session_id],["tags",(m.tags||[]).join(", ")],["importance",m.importance],["confidence",m.confidence],["source",m.source],["created",P(m.created_at)],["updated",P(m.updated_at)],["accessed",m.access_count],["version",m.version]].filter(([,h])=>h!=null&&h!=="").map(([h,y])=>u`<dt>${h}</dt><dd>${String(y)}</dd>`)}
    </dl>
    <h3>History</h3>
    ${c.error?u`<${x} error=${c.error} />`:c.data&&c.data.history.length?u`<ol class="history">${c.data.history.map(h=>u`<li>
            <${z}>${h.event}</${z}> ${P(h.at)} by ${h.actor}
            ${h.old?u`<div><del>${h.old}</del></div>`:""}${h.new?u`<div><ins>${h.new}</ins></div>`:""}
          </li>`)}</ol>`:u`<p class="muted">No recorded changes.</p>`}
  </section>`}function Jt({params:t}){const e=L(t,["tag","c"]),n=e.c||[],o=Object.fromEntries(Bt.map(f=>[f,e[f]])),[a,r]=g(new Set),[s,c]=g(null),[_,i]=Ee(),d=N(()=>zt(o,n[n.length-1]),[t.toString()]),p=(f,h={})=>T("memories",{...f,...h}),l=d.data&&d.data.items||[],$=f=>{const h=new Set(a);h.has(f)?h.delete(f):h.add(f),r(h)},m=()=>i(`Delete ${a.size} selected memories? This cannot be undone.`,async()=>{const f=new Map(l.map(y=>[y.id,y]));let h=0;for(const y of a){const C=f.get(y);await Ne(`/v1/memories/${y}`,{user_id:C&&C.scope==="declarative"?C.user_id:void 0}),h+=1}r(new Set),c(`Deleted ${h} memories.`),d.reload()},`Delete ${a.size}`),k=!!o.q;return u`<h1>Memories</h1>
    <${Kt} f=${o} onApply=${f=>{r(new Set),p(f)}} />
    ${s&&u`<${D}>${s}</${D}>`}
    <${x} error=${d.error} />
    <div class="split">
      <section class="list" aria-label="memories">
        <div class="row">
          <span class="muted" aria-live="polite">${d.loading?"Loading…":`${l.length} ${k?"best matches":"on this page"}`}</span>
          <button type="button" class="danger" disabled=${!a.size} onClick=${m}>
            Delete selected (${a.size})</button>
        </div>
        <table>
          <thead><tr><th scope="col"><span class="sr-only">Select</span></th><th scope="col">Memory</th>
            ${k&&u`<th scope="col">Score</th>`}
            <th scope="col">Scope</th><th scope="col">User</th><th scope="col">State</th><th scope="col">Created</th></tr></thead>
          <tbody>
            ${l.map(f=>u`<tr key=${f.id} class=${e.id===f.id?"current":""}>
              <td><input type="checkbox" aria-label=${`select ${f.id}`} checked=${a.has(f.id)}
                onChange=${()=>$(f.id)} /></td>
              <td><a href=${`/ui/memories?${Vt(t,"id",f.id)}`}
                onClick=${h=>{h.preventDefault(),p(L(t,["tag","c"]),{id:f.id})}}
                class="memtext">${O(f).slice(0,200)}</a></td>
              ${k&&u`<td>${f._score.toFixed(3)}</td>`}
              <td>${f.scope}</td><td>${f.user_id||""}</td><td>${f.state}</td><td>${P(f.created_at)}</td>
            </tr>`)}
          </tbody>
        </table>
        ${!d.loading&&!l.length&&!d.error&&u`<p class="muted">No memories match.</p>`}
        ${!k&&u`<${yt} cursors=${n} next=${d.data&&d.data.next_cursor}
          onPage=${f=>p({...o,c:f})} />`}
      </section>
      ${e.id&&u`<${Wt} key=${e.id} id=${e.id} f=${o} ask=${i}
        onChanged=${()=>d.reload()}
        onClose=${()=>p(L(t,["tag","c"]),{id:void 0})} />`}
    </div>
    ${_}`}function Vt(t,e,n){const o=new URLSearchParams(t);return o.set(e,n),o}const Gt=[["relevance","relevance"],["lexical","lexical_score"],["vector","similarity"],["graph","graph"],["recency","recency"],["access","access"],["importance","importance"]];function Yt({label:t,value:e,raw:n}){if(e==null)return u`<span class="sig none">${t} —</span>`;const o=Math.max(0,Math.min(1,e))*100;return u`<span class="sig" title=${`${t}: ${n??e}`}>
    <span class="siglabel">${t}</span>
    <span class="bar" role="img" aria-label=${`${t} ${Number(n??e).toFixed(3)}`}>
      <span style=${`width:${o.toFixed(1)}%`}></span></span>
    <span class="num">${Number(n??e).toFixed(3)}</span></span>`}function Qt({params:t}){const e=L(t),[n,o]=g({limit:"10",...e});E(()=>o({limit:"10",...e}),[t.toString()]);const a=i=>d=>o({...n,[i]:d}),r=N(()=>{if(!e.query)return Promise.resolve(null);const i={};return e.scope&&(i.scope=e.scope),e.category&&(i.category=e.category),e.agent_id&&(i.agent_id=e.agent_id),B("/v1/recall",{query:e.query,namespace:e.namespace||void 0,user_id:e.user_id||void 0,session_id:e.session_id||void 0,limit:e.limit?Number(e.limit):void 0,mode:e.mode||void 0,min_score:e.min_score?Number(e.min_score):void 0,include_archived:e.include_archived==="true",cluster:e.cluster?Number(e.cluster):void 0,filters:i,explain:!0})},[t.toString()]),s=i=>{i.preventDefault(),T("recall",n)},c=r.data&&r.data.hits||[],_=Math.max(1e-9,...c.map(i=>i.signals&&i.signals.lexical_score||0));return u`<h1>Recall playground</h1>
    <form class="filters" onSubmit=${s} aria-label="recall request">
      <${b} label="Query" name="query" type="search" value=${n.query} onInput=${a("query")} required
        placeholder="what the agent is asked" class="wide" />
      <${b} label="Namespace" name="namespace" value=${n.namespace} onInput=${a("namespace")} placeholder="default" />
      <${b} label="User" name="user_id" value=${n.user_id} onInput=${a("user_id")} />
      <${b} label="Session" name="session_id" value=${n.session_id} onInput=${a("session_id")} />
      <${b} label="Agent" name="agent_id" value=${n.agent_id} onInput=${a("agent_id")} />
      <${R} label="Mode" name="mode" value=${n.mode} onChange=${a("mode")}
        options=${["hybrid","lexical","vector","overlap"]} any="default (hybrid)" />
      <${R} label="Scope" name="scope" value=${n.scope} onChange=${a("scope")} options=${ht} />
      <${b} label="Category" name="category" value=${n.category} onInput=${a("category")} />
      <${b} label="Limit" name="limit" type="number" min="1" max="100" value=${n.limit} onInput=${a("limit")} />
      <${b} label="Min score" name="min_score" type="number" min="0" max="1" step="0.05"
        value=${n.min_score} onInput=${a("min_score")} />
      <${b} label="Cluster" name="cluster" type="number" min="0" value=${n.cluster} onInput=${a("cluster")} />
      <label class="field check" for="inc-arch"><input id="inc-arch" type="checkbox"
        checked=${n.include_archived==="true"} onChange=${i=>a("include_archived")(i.currentTarget.checked?"true":"")} />
        <span>Include archived</span></label>
      <div class="actions"><button type="submit">Recall</button></div>
    </form>
    <${x} error=${r.error} />
    ${r.loading&&e.query&&u`<p class="loading">Recalling…</p>`}
    ${r.data&&u`<section aria-label="hits">
      <p class="muted" aria-live="polite">${c.length} hits</p>
      <ol class="hits">${c.map(i=>u`<li key=${i.memory.id}>
        <div class="row"><a href=${`/ui/memories?id=${i.memory.id}${i.memory.user_id?`&user_id=${encodeURIComponent(i.memory.user_id)}`:""}`}
          class="memtext">${O(i.memory)}</a><strong class="score">${i.score.toFixed(3)}</strong></div>
        <div class="signals">${Gt.map(([d,p])=>{const $=(i.signals||{})[p],m=p==="lexical_score"&&$!==void 0?$/_:$;return u`<${Yt} label=${d} value=${m} raw=${$} />`})}
        ${i.signals&&i.signals.lexical_rank&&u`<span class="muted">lexical rank ${i.signals.lexical_rank}</span>`}
        ${i.signals&&i.signals.vector_rank&&u`<span class="muted"> · vector rank ${i.signals.vector_rank}</span>`}
        </div>
        <div class="muted">${i.memory.scope} · ${i.memory.user_id||"no user"} · ${i.memory.created_at}</div>
      </li>`)}</ol></section>`}`}function Zt({id:t,user:e}){const n=N(()=>I(`/v1/memories/${t}/history`,{user_id:e}),[t,e]);return n.error?u`<${x} error=${n.error} />`:n.data?n.data.history.length?u`<ol class="history">${n.data.history.map(o=>u`<li>
    <${z}>${o.event}</${z}> ${P(o.at)} by ${o.actor}
    ${o.confidence!==void 0&&o.confidence!==null?` · confidence ${o.confidence}`:""}
    ${o.old?u`<div><del>${o.old}</del></div>`:""}${o.new?u`<div><ins>${o.new}</ins></div>`:""}
  </li>`)}</ol>`:u`<p class="muted">No recorded changes.</p>`:u`<p class="loading">Loading…</p>`}function Ve({f:t,state:e,title:n,cursors:o,onPage:a}){const[r,s]=g(null),c=N(()=>I("/v1/memories",{namespace:t.namespace,user_id:t.user_id,scope:"declarative",category:t.type,state:e,cursor:o[o.length-1],limit:50}),[t.namespace,t.user_id,t.type,e,o.join()]),_=c.data&&c.data.items||[],i=`${e}-title`;return u`<section aria-labelledby=${i}>
    <h2 id=${i}>${n}</h2>
    <${x} error=${c.error} />
    <table><thead><tr><th scope="col">Entry</th><th scope="col">Type</th><th scope="col">Confidence</th>
      <th scope="col">Source</th><th scope="col">${e==="superseded"?"Replaced by":"Updated"}</th></tr></thead>
    <tbody>${_.map(d=>u`<tr key=${d.id}>
      <td><button type="button" class="link" aria-expanded=${r===d.id}
        onClick=${()=>s(r===d.id?null:d.id)}>${d.content}</button>
        ${r===d.id&&u`<${Zt} id=${d.id} user=${t.user_id} />`}</td>
      <td>${d.type||d.category}</td>
      <td>${d.confidence??"stated"}</td><td>${d.source}</td>
      <td>${e==="superseded"?u`<a href=${`/ui/memories?id=${d.superseded_by}&user_id=${encodeURIComponent(t.user_id)}`}>${d.superseded_by}</a>`:P(d.updated_at)}</td></tr>`)}</tbody></table>
    ${!c.loading&&!_.length&&!c.error&&u`<p class="muted">None.</p>`}
    ${o&&u`<${yt} cursors=${o} next=${c.data&&c.data.next_cursor} onPage=${a} />`}
  </section>`}function Xt({f:t,onDecided:e}){const n=N(()=>I("/v1/proposals",{user_id:t.user_id}),[t.user_id]),[o,a]=Ee(),[r,s]=g(null),[c,_]=g(null),i=n.data&&n.data.proposals||[],d=async l=>{_(null);try{await B(`/v1/proposals/${l.id}/confirm`),s(`Accepted: ${l.content}`),n.reload(),e()}catch($){_($)}},p=l=>a(`Reject the proposal "${l.content}"?`,async()=>{await B(`/v1/proposals/${l.id}/reject`),s(`Rejected: ${l.content}`),n.reload()},"Reject");return u`<section aria-labelledby="pending-title">
    <h2 id="pending-title">Pending confirmations</h2>
    ${r&&u`<${D}>${r}</${D}>`}
    <${x} error=${n.error||c} />
    ${!n.loading&&!i.length&&!n.error&&u`<p class="muted">Nothing waits for confirmation.</p>`}
    <ul class="proposals">${i.map(l=>u`<li key=${l.id}>
      <div><strong>${l.content}</strong> <${z}>${l.type||l.kind}</${z}>
        <span class="muted"> from ${l.source}${l.agent_id?` (${l.agent_id})`:""}, confidence ${l.confidence??"—"},
        expires ${P(l.expires_at)}</span></div>
      ${l.supersedes&&u`<div class="muted">would replace: <del>${l.supersedes.content}</del></div>`}
      <div class="actions"><button type="button" onClick=${()=>d(l)}>Accept</button>
        <button type="button" class="danger" onClick=${()=>p(l)}>Reject</button></div>
    </li>`)}</ul>
    ${o}
  </section>`}function en({params:t}){const e=L(t,["c","sc"]),[n,o]=g(e);E(()=>o(e),[t.toString()]);const[a,r]=g(0),s=c=>_=>o({...n,[c]:_});return u`<h1>Declarative memory</h1>
    <form class="filters" aria-label="filters" onSubmit=${c=>{c.preventDefault(),T("declarative",n)}}>
      <${b} label="User" name="user_id" value=${n.user_id} onInput=${s("user_id")} required />
      <${b} label="Namespace" name="namespace" value=${n.namespace} onInput=${s("namespace")} placeholder="default" />
      <${R} label="Type" name="type" value=${n.type} onChange=${s("type")} options=${Ht} />
      <div class="actions"><button type="submit">Show</button></div>
    </form>
    ${e.user_id?u`<${Xt} f=${e} onDecided=${()=>r(a+1)} />
        <${Ve} key=${`a${a}`} f=${e} state="active" title="Entries" cursors=${e.c||[]}
          onPage=${c=>T("declarative",{...e,c})} />
        <${Ve} key=${`s${a}`} f=${e} state="superseded" title="Superseded" cursors=${e.sc||[]}
          onPage=${c=>T("declarative",{...e,sc:c})} />`:u`<p class="muted">Declarative entries belong to one user: name the user.</p>`}`}const Ge=400;function tn(t){const e=new Map,n=(a,r)=>{e.has(a)||e.set(a,{name:a,value:0,category:r?1:0}),e.get(a).value+=1},o=t.map(a=>(n(a.subject,!1),n(a.object,!a.object_id),{source:a.subject,target:a.object,value:a.predicate}));return{tooltip:{},legend:[{data:["entity","value"]}],series:[{type:"graph",layout:"force",roam:!0,draggable:!0,categories:[{name:"entity"},{name:"value"}],data:[...e.values()].map(a=>({...a,symbolSize:12+Math.min(24,a.value*3)})),links:o,label:{show:!0,position:"right"},edgeLabel:{show:!0,formatter:a=>a.data.value,fontSize:10},edgeSymbol:["none","arrow"],force:{repulsion:160,edgeLength:110}}]}}function nn({params:t}){const e=L(t),[n,o]=g(e);E(()=>o(e),[t.toString()]);const a=p=>l=>o({...n,[p]:l}),r=e.as_of?new Date(e.as_of).toISOString():void 0,s=N(()=>I("/v1/graph/relations",{user_id:e.user_id,as_of:r,entity:e.entity,hops:e.entity?e.hops:void 0,limit:Ge}),[t.toString()]),c=s.data&&s.data.relations||[],_=H(()=>tn(c),[s.data]),i=H(()=>[...new Set(c.flatMap(p=>p.object_id?[p.subject,p.object]:[p.subject]))].sort(),[s.data]),d=p=>T("graph",{...e,entity:p});return u`<h1>Knowledge graph</h1>
    <form class="filters" aria-label="graph filters" onSubmit=${p=>{p.preventDefault(),T("graph",n)}}>
      <${b} label="User" name="user_id" value=${n.user_id} onInput=${a("user_id")} />
      <${b} label="As of" name="as_of" type="datetime-local" value=${n.as_of} onInput=${a("as_of")} />
      <${b} label="Entity" name="entity" value=${n.entity} onInput=${a("entity")} list="entity-names" />
      <datalist id="entity-names">${i.map(p=>u`<option value=${p} />`)}</datalist>
      <${R} label="Hops" name="hops" value=${n.hops} onChange=${a("hops")} options=${["1","2","3"]} any="1" />
      <div class="actions"><button type="submit">Show</button>
        ${e.entity&&u`<button type="button" onClick=${()=>T("graph",{...e,entity:void 0,hops:void 0})}>
          Whole graph</button>`}</div>
    </form>
    <${x} error=${s.error} />
    <p class="muted" aria-live="polite">${s.loading?"Loading…":`${c.length} relations, ${i.length} entities${e.as_of?`, as of ${P(r)}`:", as they hold now"}`}
      ${s.data&&s.data.truncated?`; the first ${Ge} shown: pick an entity for its neighbourhood`:""}</p>
    ${c.length>0&&u`<${ie} option=${_} height=${480} testid="graph"
      label=${`graph of ${c.length} relations between ${i.length} entities`} />`}
    <section aria-labelledby="rel-title"><h2 id="rel-title">Relations</h2>
      <table class="relations"><thead><tr><th scope="col">Subject</th><th scope="col">Predicate</th>
        <th scope="col">Object</th><th scope="col">Valid from</th><th scope="col">Until</th><th scope="col">Confidence</th></tr></thead>
      <tbody>${c.map(p=>u`<tr key=${p.id}>
        <td><button type="button" class="link" onClick=${()=>d(p.subject)}>${p.subject}</button></td>
        <td>${p.predicate}</td>
        <td>${p.object_id?u`<button type="button" class="link" onClick=${()=>d(p.object)}>${p.object}</button>`:p.object}</td>
        <td>${P(p.valid_at||p.created_at)}</td><td>${P(p.invalid_at)}</td><td>${p.confidence.toFixed(2)}</td>
      </tr>`)}</tbody></table>
      ${!s.loading&&!c.length&&!s.error&&u`<p class="muted">No relations${e.user_id?"":" for memories without a user; name a user"}.</p>`}
    </section>`}function bt(t){const e=[],n=new Date;for(let o=t-1;o>=0;o--){const a=new Date(Date.UTC(n.getUTCFullYear(),n.getUTCMonth(),n.getUTCDate()-o));e.push(a.toISOString().slice(0,10))}return e}function on(t,e){const n=bt(e),o=[...new Set(t.growth.map(a=>a.scope))];return{tooltip:{trigger:"axis"},legend:{data:o},grid:{left:48,right:16,bottom:48},xAxis:{type:"category",data:n},yAxis:{type:"value",name:"created"},series:o.map(a=>{const r=new Map(t.growth.filter(s=>s.scope===a).map(s=>[s.day,s.count]));return{name:a,type:"bar",stack:"scope",data:n.map(s=>r.get(s)||0)}})}}function an(t,e){const n=bt(e),o=new Map(t.last_accessed.map(a=>[a.day,a.count]));return{tooltip:{trigger:"axis"},grid:{left:48,right:16,bottom:48},xAxis:{type:"category",data:n},yAxis:{type:"value",name:"last accessed"},series:[{name:"memories last accessed",type:"line",areaStyle:{},data:n.map(a=>o.get(a)||0)}]}}function rn(t){const e=t.items.map((r,s)=>`${s+1}. ${O(r).slice(0,28)}`),n=[];let o=1;t.matrix.forEach((r,s)=>r.forEach((c,_)=>{n.push([_,s,Number(c.toFixed(3))]),s!==_&&(o=Math.min(o,c))}));const a=Math.max(-1,Math.floor(o*10)/10);return{tooltip:{formatter:r=>`${e[r.value[1]]}<br>${e[r.value[0]]}<br>similarity ${r.value[2]}`},grid:{left:220,right:24,top:16,bottom:120},xAxis:{type:"category",data:e.map((r,s)=>String(s+1))},yAxis:{type:"category",data:e,inverse:!0,axisLabel:{width:200,overflow:"truncate"}},visualMap:{min:a,max:1,calculable:!0,orient:"horizontal",left:"center",bottom:8},series:[{type:"heatmap",data:n,progressive:0}]}}function me({title:t,counts:e}){return u`<div class="card"><h3>${t}</h3><dl class="fields">
    ${Object.entries(e).map(([n,o])=>u`<dt>${n}</dt><dd>${o}</dd>`)}</dl></div>`}function sn({f:t}){const e=N(()=>I("/v1/analytics/similarity",{user_id:t.user_id,namespace:t.namespace,cluster:t.cluster,limit:20}),[t.user_id,t.namespace,t.cluster]),n=H(()=>e.data&&rn(e.data),[e.data]);return u`<section aria-labelledby="heat-title"><h2 id="heat-title">Similarity of ${t.cluster?`topic ${t.cluster}`:"the first memories"}</h2>
    <${x} error=${e.error} />
    ${e.data&&(e.data.items.length<2?u`<p class="muted">Fewer than two memories to compare.</p>`:u`<${ie} option=${n} height=${560} testid="heatmap"
          label=${`similarity heatmap of ${e.data.items.length} memories`} />`)}
  </section>`}function ln({f:t}){const e=N(()=>I("/v1/clusters",{user_id:t.user_id,namespace:t.namespace}),[t.user_id,t.namespace]),n=e.error&&e.error.status===404;return u`<section aria-labelledby="clusters-title"><h2 id="clusters-title">Topics</h2>
    ${n?u`<p class="muted">Not clustered yet: run the cluster job (Operations).</p>`:u`<${x} error=${e.error} />`}
    ${e.data&&u`<p class="muted">${e.data.clusters.length} topics fitted on ${e.data.fitted_on} memories,
      silhouette ${e.data.silhouette.toFixed(2)}</p>
      <table><thead><tr><th scope="col">Topic</th><th scope="col">Label</th><th scope="col">Size</th><th scope="col"></th></tr></thead>
      <tbody>${e.data.clusters.map(o=>u`<tr key=${o.id}><td>${o.id}</td><td>${o.label}</td><td>${o.size}</td>
        <td><button type="button" class="link" onClick=${()=>T("analytics",{...t,cluster:o.id})}>
          Heatmap of topic ${o.id}</button></td></tr>`)}</tbody></table>`}
  </section>`}function cn({params:t}){const e=L(t),[n,o]=g(e);E(()=>o(e),[t.toString()]);const a=i=>d=>o({...n,[i]:d}),r=Math.min(366,Math.max(1,Number(e.days)||30)),s=N(()=>I("/v1/analytics",{namespace:e.namespace,user_id:e.user_id,scope:e.scope,days:r,top:10}),[e.namespace,e.user_id,e.scope,r]),c=H(()=>s.data&&on(s.data,r),[s.data]),_=H(()=>s.data&&an(s.data,r),[s.data]);return u`<h1>Analytics</h1>
    <form class="filters" aria-label="filters" onSubmit=${i=>{i.preventDefault(),T("analytics",n)}}>
      <${b} label="User" name="user_id" value=${n.user_id} onInput=${a("user_id")} />
      <${b} label="Namespace" name="namespace" value=${n.namespace} onInput=${a("namespace")} placeholder="default" />
      <${b} label="Days" name="days" type="number" min="1" max="366" value=${n.days||"30"} onInput=${a("days")} />
      <div class="actions"><button type="submit">Show</button></div>
    </form>
    <${x} error=${s.error} />
    ${s.loading&&u`<p class="loading">Counting…</p>`}
    ${s.data&&u`<div class="cards">
        <div class="card"><h3>Memories</h3><p class="big">${s.data.total}</p></div>
        <${me} title="By scope" counts=${s.data.by_scope} />
        <${me} title="By state" counts=${s.data.by_state} />
        <${me} title="By category" counts=${s.data.by_category} />
      </div>
      <section aria-labelledby="growth-title"><h2 id="growth-title">Growth per day by scope</h2>
        <${ie} option=${c} testid="growth" label=${`memories created per day over ${r} days, by scope`} /></section>
      <section aria-labelledby="access-title"><h2 id="access-title">Access over time</h2>
        <p class="muted">Memories by the day they were last recalled or read.</p>
        <${ie} option=${_} testid="access" label=${`memories by day of last access over ${r} days`} /></section>
      <section aria-labelledby="top-title"><h2 id="top-title">Most accessed</h2>
        ${s.data.top_accessed.length?u`<table><thead><tr><th scope="col">Memory</th><th scope="col">Accesses</th>
          <th scope="col">User</th></tr></thead><tbody>${s.data.top_accessed.map(i=>u`<tr key=${i.id}>
          <td><a href=${`/ui/memories?id=${i.id}${i.user_id?`&user_id=${encodeURIComponent(i.user_id)}`:""}`}>${O(i).slice(0,160)}</a></td>
          <td>${i.access_count}</td><td>${i.user_id||""}</td></tr>`)}</tbody></table>`:u`<p class="muted">No memory was accessed yet.</p>`}</section>`}
    ${e.user_id?u`<${sn} f=${e} /><${ln} f=${e} />`:u`<${D}>Name a user for the similarity heatmap and their topics.</${D}>`}`}const dn=["expire","consolidate","promote","prune","archive","cluster"];function un(){const t=N(()=>I("/readyz"),[]),e=N(()=>I("/v1/stats"),[]);return u`<section aria-labelledby="health-title"><h2 id="health-title">Store</h2>
    <${x} error=${e.error||t.error} />
    ${e.data&&u`<div class="cards">
      <div class="card"><h3>Health</h3><p class="big">${e.data.healthy&&t.data?"ok":"unavailable"}</p>
        <p class="muted">${e.data.backend} · tenant ${e.data.tenant}</p></div>
      <div class="card"><h3>Memories</h3><p class="big">${e.data.total}</p></div>
      <div class="card"><h3>By namespace</h3><dl class="fields">${e.data.namespaces.map(n=>u`<dt>${n.namespace}</dt><dd>${n.count}</dd>`)}</dl></div></div>`}
  </section>`}function Ye({job:t}){const e=t.total?Math.round(100*t.done/t.total):t.state==="done"?100:0;return u`<progress max="100" value=${e} aria-label=${`job ${t.id} ${e}%`}></progress>
    <span class="muted"> ${t.done} of ${t.total||"?"}</span>`}function _n(){const[t,e]=g({jobs:["expire","consolidate","promote"],user_id:"",dry_run:!1,max_memories:""}),[n,o]=g(null),[a,r]=g(null),s=N(()=>I("/v1/jobs"),[]);E(()=>{if(!a||a.state!=="running")return;const i=setTimeout(async()=>{try{r(await I(`/v1/jobs/${a.id}`))}catch(d){o(d)}},500);return()=>clearTimeout(i)},[a]),E(()=>{a&&a.state!=="running"&&s.reload()},[a&&a.state]);const c=i=>e({...t,jobs:t.jobs.includes(i)?t.jobs.filter(d=>d!==i):[...t.jobs,i]});return u`<section aria-labelledby="maint-title"><h2 id="maint-title">Maintenance</h2>
    <form class="filters" onSubmit=${async i=>{i.preventDefault(),o(null);try{const d={jobs:t.jobs,dry_run:t.dry_run,background:!0};t.user_id&&(d.user_id=t.user_id),t.max_memories&&(d.max_memories=Number(t.max_memories)),r(await B("/v1/maintenance",d))}catch(d){o(d)}}} aria-label="maintenance">
      <fieldset><legend>Jobs</legend>${dn.map(i=>u`<label class="check" for=${`job-${i}`}>
        <input id=${`job-${i}`} type="checkbox" checked=${t.jobs.includes(i)} onChange=${()=>c(i)} /> ${i}</label>`)}</fieldset>
      <${b} label="Only user" name="m-user" value=${t.user_id} onInput=${i=>e({...t,user_id:i})} />
      <${b} label="Prune to (memories per user)" name="m-max" type="number" min="1" value=${t.max_memories}
        onInput=${i=>e({...t,max_memories:i})} />
      <label class="check" for="m-dry"><input id="m-dry" type="checkbox" checked=${t.dry_run}
        onChange=${i=>e({...t,dry_run:i.currentTarget.checked})} /> Dry run</label>
      <div class="actions"><button type="submit" disabled=${a&&a.state==="running"}>Run</button></div>
    </form>
    <${x} error=${n} />
    ${a&&u`<div class="job" aria-live="polite">Job ${a.id}: <strong>${a.state}</strong> <${Ye} job=${a} />
      ${a.error&&u`<${x} error=${{code:a.error_code,message:a.error}} />`}
      ${a.report&&u`<pre>${JSON.stringify(a.report,null,2)}</pre>`}</div>`}
    <h3>Jobs of this server</h3>
    ${s.error?u`<${x} error=${s.error} />`:s.data&&(s.data.items.length?u`<table><thead><tr><th scope="col">Job</th><th scope="col">Kind</th><th scope="col">State</th><th scope="col">Progress</th></tr></thead>
        <tbody>${s.data.items.map(i=>u`<tr key=${i.id}><td>${i.id}</td><td>${i.kind}</td><td>${i.state}</td>
          <td><${Ye} job=${i} /></td></tr>`)}</tbody></table>`:u`<p class="muted">No jobs yet.</p>`)}
  </section>`}function pn(){const t=N(()=>I("/v1/admin/keys"),[]),[e,n]=g({tenant:"",label:"",admin:!1,operator:!1}),[o,a]=g(null),[r,s]=g(null),[c,_]=Ee(),i=async p=>{p.preventDefault(),s(null);try{const l={tenant:e.tenant,admin:e.admin,operator:e.operator};e.label&&(l.label=e.label),a(await B("/v1/admin/keys",l)),t.reload()}catch(l){s(l)}},d=p=>_(`Revoke key ${p.id}${p.label?` (${p.label})`:""} of tenant ${p.tenant}? Clients using it stop working.`,async()=>{await Ne(`/v1/admin/keys/${p.id}`),t.reload()},"Revoke");return u`<section aria-labelledby="keys-title"><h2 id="keys-title">API keys</h2>
    ${t.error?u`<${x} error=${t.error} />`:t.data&&u`<table><thead><tr><th scope="col">Id</th>
      <th scope="col">Tenant</th><th scope="col">Label</th><th scope="col">Rights</th><th scope="col">Created</th><th scope="col"></th></tr></thead>
      <tbody>${t.data.keys.map(p=>u`<tr key=${p.id}><td>${p.id}</td><td>${p.tenant}</td><td>${p.label||""}</td>
        <td>${[p.admin&&"admin",p.operator&&"operator"].filter(Boolean).join(", ")||"user"}</td><td>${P(p.created_at)}</td>
        <td><button type="button" class="danger" onClick=${()=>d(p)}>Revoke</button></td></tr>`)}</tbody></table>
      ${!t.data.keys.length&&u`<p class="muted">No keys: the server is open on loopback. The first key
        made ends that: from then on every request, this page's too, needs a key.</p>`}`}
    ${!t.error&&u`<form class="filters" onSubmit=${i} aria-label="new key">
      <${b} label="Tenant" name="k-tenant" value=${e.tenant} onInput=${p=>n({...e,tenant:p})} required />
      <${b} label="Label" name="k-label" value=${e.label} onInput=${p=>n({...e,label:p})} />
      <label class="check" for="k-admin"><input id="k-admin" type="checkbox" checked=${e.admin}
        onChange=${p=>n({...e,admin:p.currentTarget.checked})} /> Admin</label>
      <label class="check" for="k-op"><input id="k-op" type="checkbox" checked=${e.operator}
        onChange=${p=>n({...e,operator:p.currentTarget.checked})} /> Operator</label>
      <div class="actions"><button type="submit">Create key</button></div></form>`}
    <${x} error=${r} />
    ${o&&u`<${D}>New key for ${o.info.tenant} (shown once): <code>${o.key}</code></${D}>`}
    ${c}
  </section>`}function $n(){return u`<h1>Operations</h1><${un} /><${_n} /><${pn} />`}const Qe=[["memories","Memories",Jt],["recall","Recall playground",Qt],["declarative","Declarative",en],["graph","Graph",nn],["analytics","Analytics",cn],["operations","Operations",$n]],mn=["namespace","user_id"];function hn({onDone:t}){const[e,n]=g("");return u`<form class="keyprompt" onSubmit=${a=>{a.preventDefault(),$t(e.trim()),t()}} aria-labelledby="key-title">
    <h2 id="key-title">API key</h2>
    <p>This server needs an API key. It is kept for this browser session only.</p>
    <label class="field" for="api-key"><span>Key</span>
      <input id="api-key" type="password" autocomplete="off" value=${e}
        onInput=${a=>n(a.currentTarget.value)} required /></label>
    <button type="submit">Use key</button>
  </form>`}function fn(){const t=Ut(),[e,n]=g(!1),[o,a]=g(0);E(()=>At(()=>n(!0)),[]);const r=Qe.find(([d])=>d===t.page),s={};mn.forEach(d=>t.params.get(d)&&(s[d]=t.params.get(d)));const c=(d,p)=>{d.button!==0||d.metaKey||d.ctrlKey||d.shiftKey||(d.preventDefault(),T(p,s))},_=d=>`/ui/${d}${new URLSearchParams(s).size?`?${new URLSearchParams(s)}`:""}`,i=r&&r[2];return u`<header>
      <a class="brand" href="/ui/memories">muisti</a>
      <nav aria-label="pages">
        ${Qe.map(([d,p])=>u`<a href=${_(d)} onClick=${l=>c(l,d)}
              aria-current=${t.page===d?"page":void 0}>${p}</a>`)}
      </nav>
      ${pt()&&u`<button type="button" class="link" onClick=${()=>{$t(""),a(o+1)}}>Forget key</button>`}
    </header>
    <main id="main">
      ${e&&u`<${hn} onDone=${()=>{n(!1),a(o+1)}} />`}
      ${i?u`<${i} key=${`${t.page}-${o}`} params=${t.params} />`:u`<div class="error" role="alert">No page ${t.page}.
            <a href="/ui/memories">Memories</a></div>`}
    </main>
    <footer><a href="/ui/assets/third-party-licenses.txt">Third-party licences</a></footer>`}const gt=document.getElementById("app");gt.textContent="";It(u`<${fn} />`,gt);
