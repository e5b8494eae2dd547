var le,v,Ze,M,Ae,Xe,et,pe,X,J,tt,Se,he,fe,ae={},oe=[],vt=/acit|ex(?:s|g|n|p|$)|rph|grid|ows|mnc|ntw|ine[ch]|zoo|^ord|itera/i,ce=Array.isArray;function D(t,e){for(var n in e)t[n]=e[n];return t}function xe(t){t&&t.parentNode&&t.parentNode.removeChild(t)}function nt(t,e,n){var a,o,r,s={};for(r in e)r=="key"?a=e[r]:r=="ref"?o=e[r]:s[r]=e[r];if(arguments.length>2&&(s.children=arguments.length>3?le.call(arguments,2):n),typeof t=="function"&&t.defaultProps!=null)for(r in t.defaultProps)s[r]===void 0&&(s[r]=t.defaultProps[r]);return ee(t,s,a,o,null)}function ee(t,e,n,a,o){var r={type:t,props:e,key:n,ref:a,__k:null,__:null,__b:0,__e:null,__c:null,constructor:void 0,__v:o??++Ze,__i:-1,__u:0};return o==null&&v.vnode!=null&&v.vnode(r),r}function de(t){return t.children}function te(t,e){this.props=t,this.context=e}function q(t,e){if(e==null)return t.__?q(t.__,t.__i+1):null;for(var n;e<t.__k.length;e++)if((n=t.__k[e])!=null&&n.__e!=null)return n.__e;return typeof t.type=="function"?q(t):null}function kt(t){if(t.__P&&t.__d){var e=t.__v,n=e.__e,a=[],o=[],r=D({},e);r.__v=e.__v+1,v.vnode&&v.vnode(r),Ce(t.__P,r,e,t.__n,t.__P.namespaceURI,32&e.__u?[n]:null,a,n??q(e),!!(32&e.__u),o),r.__v=e.__v,r.__.__k[r.__i]=r,it(a,r,o),e.__e=e.__=null,r.__e!=n&&at(r)}}function at(t){if((t=t.__)!=null&&t.__c!=null)return t.__e=t.__c.base=null,t.__k.some(function(e){if(e!=null&&e.__e!=null)return t.__e=t.__c.base=e.__e}),at(t)}function De(t){(!t.__d&&(t.__d=!0)&&M.push(t)&&!re.__r++||Ae!=v.debounceRendering)&&((Ae=v.debounceRendering)||Xe)(re)}function re(){try{for(var t,e=1;M.length;)M.length>e&&M.sort(et),t=M.shift(),e=M.length,kt(t)}finally{M.length=re.__r=0}}function ot(t,e,n,a,o,r,s,c,u,i,d){var p,l,$,m,k,f,h=a&&a.__k||oe,y=e.length;for(u=wt(n,e,h,u,y),p=0;p<y;p++)($=n.__k[p])!=null&&(l=$.__i!=-1&&h[$.__i]||ae,$.__i=p,f=Ce(t,$,l,o,r,s,c,u,i,d),m=$.__e,$.ref&&l.ref!=$.ref&&(l.ref&&Ie(l.ref,null,$),d.push($.ref,$.__c||m,$)),k==null&&m!=null&&(k=m),4&$.__u?(u=rt($,u,t),l.__e&&(l.__e=null)):typeof $.type=="function"&&f!==void 0?u=f:m&&(u=m.nextSibling),$.__u&=-7);return n.__e=k,u}function wt(t,e,n,a,o){var r,s,c,u,i,d=n.length,p=d,l=0;for(t.__k=new Array(o),r=0;r<o;r++)(s=e[r])!=null&&typeof s!="boolean"&&typeof s!="function"?(typeof s=="string"||typeof s=="number"||typeof s=="bigint"||s.constructor==String?s=t.__k[r]=ee(null,s,null,null,null):ce(s)?s=t.__k[r]=ee(de,{children:s},null,null,null):s.constructor===void 0&&s.__b>0?s=t.__k[r]=ee(s.type,s.props,s.key,s.ref?s.ref:null,s.__v):t.__k[r]=s,u=r+l,s.__=t,s.__b=t.__b+1,c=null,(i=s.__i=St(s,n,u,p))!=-1&&(p--,(c=n[i])&&(c.__u|=2)),c==null||c.__v==null?(i==-1&&(o>d?l--:o<d&&l++),typeof s.type!="function"&&(s.__u|=4)):i!=u&&(i==u-1?l--:i==u+1?l++:(i>u?l--:l++,s.__u|=4))):t.__k[r]=null;if(p)for(r=0;r<d;r++)(c=n[r])!=null&&(2&c.__u)==0&&(c.__e==a&&(a=q(c)),ct(c,c));return a}function rt(t,e,n){var a,o;if(typeof t.type=="function"){for(a=t.__k,o=0;a&&o<a.length;o++)a[o]&&(a[o].__=t,e=rt(a[o],e,n));return e}t.__e!=e&&(e&&t.type&&!e.parentNode&&(e=q(t)),e=n.insertBefore(t.__e,e||null));do e=e&&e.nextSibling;while(e!=null&&e.nodeType==8);return e}function St(t,e,n,a){var o,r,s,c=t.key,u=t.type,i=e[n],d=i!=null&&(2&i.__u)==0;if(i===null&&c==null||d&&c==i.key&&u==i.type)return n;if(a>(d?1:0)){for(o=n-1,r=n+1;o>=0||r<e.length;)if((i=e[s=o>=0?o--:r++])!=null&&(2&i.__u)==0&&c==i.key&&u==i.type)return s}return-1}function Me(t,e,n){e[0]=="-"?t.setProperty(e,n??""):t[e]=n==null?"":typeof n!="number"||vt.test(e)?n:n+"px"}function Q(t,e,n,a,o){var r,s;e:if(e=="style")if(typeof n=="string")t.style.cssText=n;else{if(typeof a=="string"&&(t.style.cssText=a=""),a)for(e in a)n&&e in n||Me(t.style,e,"");if(n)for(e in n)a&&n[e]==a[e]||Me(t.style,e,n[e])}else if(e[0]=="o"&&e[1]=="n")r=e!=(e=e.replace(tt,"$1")),s=e.toLowerCase(),e=s in t||e=="onFocusOut"||e=="onFocusIn"?s.slice(2):e.slice(2),t.l||(t.l={}),t.l[e+r]=n,n?a?n[J]=a[J]:(n[J]=Se,t.addEventListener(e,r?fe:he,r)):t.removeEventListener(e,r?fe:he,r);else{if(o=="http://www.w3.org/2000/svg")e=e.replace(/xlink(H|:h)/,"h").replace(/sName$/,"s");else if(e!="width"&&e!="height"&&e!="href"&&e!="list"&&e!="form"&&e!="tabIndex"&&e!="download"&&e!="rowSpan"&&e!="colSpan"&&e!="role"&&e!="popover"&&e in t)try{t[e]=n??"";break e}catch{}typeof n=="function"||(n==null||n===!1&&e[4]!="-"?t.removeAttribute(e):t.setAttribute(e,e=="popover"&&n==1?"":n))}}function Ue(t){return function(e){if(this.l){var n=this.l[e.type+t];if(e[X]==null)e[X]=Se++;else if(e[X]<n[J])return;return n(v.event?v.event(e):e)}}}function Ce(t,e,n,a,o,r,s,c,u,i){var d,p,l,$,m,k,f,h,y,C,K,U,W,Te,Y,_e,T=e.type;if(e.constructor!==void 0)return null;128&n.__u&&(u=!!(32&n.__u),r=[c=e.__e=n.__e]),(d=v.__b)&&d(e);e:if(typeof T=="function"){p=s.length;try{if(y=e.props,C=T.prototype&&T.prototype.render,K=(d=T.contextType)&&a[d.__c],U=d?K?K.props.value:d.__:a,n.__c?h=(l=e.__c=n.__c).__=l.__E:(C?e.__c=l=new T(y,U):(e.__c=l=new te(y,U),l.constructor=T,l.render=Ct),K&&K.sub(l),l.state||(l.state={}),l.__n=a,$=l.__d=!0,l.__h=[],l._sb=[]),C&&l.__s==null&&(l.__s=l.state),C&&T.getDerivedStateFromProps!=null&&(l.__s==l.state&&(l.__s=D({},l.__s)),D(l.__s,T.getDerivedStateFromProps(y,l.__s))),m=l.props,k=l.state,l.__v=e,$)C&&T.getDerivedStateFromProps==null&&l.componentWillMount!=null&&l.componentWillMount(),C&&l.componentDidMount!=null&&l.__h.push(l.componentDidMount);else{if(C&&T.getDerivedStateFromProps==null&&y!==m&&l.componentWillReceiveProps!=null&&l.componentWillReceiveProps(y,U),e.__v==n.__v||!l.__e&&l.shouldComponentUpdate!=null&&l.shouldComponentUpdate(y,l.__s,U)===!1){e.__v!=n.__v&&(l.props=y,l.state=l.__s,l.__d=!1),e.__e=n.__e,e.__k=n.__k,e.__k.some(function(H){H&&(H.__=e)}),oe.push.apply(l.__h,l._sb),l._sb=[],l.__h.length&&s.push(l),c=q(n);break e}l.componentWillUpdate!=null&&l.componentWillUpdate(y,l.__s,U),C&&l.componentDidUpdate!=null&&l.__h.push(function(){l.componentDidUpdate(m,k,f)})}if(l.context=U,l.props=y,l.__P=t,l.__e=!1,W=v.__r,Te=0,C)l.state=l.__s,l.__d=!1,W&&W(e),d=l.render(l.props,l.state,l.context),oe.push.apply(l.__h,l._sb),l._sb=[];else do l.__d=!1,W&&W(e),d=l.render(l.props,l.state,l.context),l.state=l.__s;while(l.__d&&++Te<25);l.state=l.__s,l.getChildContext!=null&&(a=D(D({},a),l.getChildContext())),C&&!$&&l.getSnapshotBeforeUpdate!=null&&(f=l.getSnapshotBeforeUpdate(m,k)),Y=d!=null&&d.type===de&&d.key==null?lt(d.props.children):d,c=ot(t,ce(Y)?Y:[Y],e,n,a,o,r,s,c,u,i),l.base=e.__e,e.__u&=-161,l.__h.length&&s.push(l),h&&(l.__E=l.__=null)}catch(H){if(s.length=p,e.__v=null,u||r!=null){if(H.then){for(e.__u|=u?160:128;c&&c.nodeType==8&&c.nextSibling;)c=c.nextSibling;r!=null&&(r[r.indexOf(c)]=null),e.__e=c}else if(r!=null)for(_e=r.length;_e--;)xe(r[_e])}else e.__e=n.__e;e.__k==null&&(e.__k=n.__k||[]),H.then||st(e),v.__e(H,e,n)}}else r==null&&e.__v==n.__v?(e.__k=n.__k,e.__e=n.__e):c=e.__e=xt(n.__e,e,n,a,o,r,s,u,i);return(d=v.diffed)&&d(e),128&e.__u?void 0:c}function st(t){t&&(t.__c&&(t.__c.__e=!0),t.__k&&t.__k.some(st))}function it(t,e,n){for(var a=0;a<n.length;a++)Ie(n[a],n[++a],n[++a]);v.__c&&v.__c(e,t),t.some(function(o){try{t=o.__h,o.__h=[],t.some(function(r){r.call(o)})}catch(r){v.__e(r,o.__v)}})}function lt(t){return typeof t!="object"||t==null||t.__b>0?t:ce(t)?t.map(lt):t.constructor!==void 0?null:D({},t)}function xt(t,e,n,a,o,r,s,c,u){var i,d,p,l,$,m,k,f=n.props||ae,h=e.props,y=e.type;if(y=="svg"?o="http://www.w3.org/2000/svg":y=="math"?o="http://www.w3.org/1998/Math/MathML":o||(o="http://www.w3.org/1999/xhtml"),r!=null){for(i=0;i<r.length;i++)if(($=r[i])&&"setAttribute"in $==!!y&&(y?$.localName==y:$.nodeType==3)){t=$,r[i]=null;break}}if(t==null){if(y==null)return document.createTextNode(h);t=document.createElementNS(o,y,h.is&&h),c&&(v.__m&&v.__m(e,r),c=!1),r=null}if(y==null)f===h||c&&t.data==h||(t.data=h);else{if(r=y=="textarea"&&h.defaultValue!=null?null:r&&le.call(t.childNodes),!c&&r!=null)for(f={},i=0;i<t.attributes.length;i++)f[($=t.attributes[i]).name]=$.value;for(i in f)$=f[i],i=="dangerouslySetInnerHTML"?p=$:i=="children"||i in h||i=="value"&&"defaultValue"in h||i=="checked"&&"defaultChecked"in h||Q(t,i,null,$,o);for(i in h)$=h[i],i=="children"?l=$:i=="dangerouslySetInnerHTML"?d=$:i=="value"?m=$:i=="checked"?k=$:c&&typeof $!="function"||f[i]===$||Q(t,i,$,f[i],o);if(d)c||p&&(d.__html==p.__html||d.__html==t.innerHTML)||(t.innerHTML=d.__html),e.__k=[];else if(p&&(t.innerHTML=""),ot(e.type=="template"?t.content:t,ce(l)?l:[l],e,n,a,y=="foreignObject"?"http://www.w3.org/1999/xhtml":o,r,s,r?r[0]:n.__k&&q(n,0),c,u),r!=null)for(i=r.length;i--;)xe(r[i]);c&&y!="textarea"||(i="value",y=="progress"&&m==null?t.removeAttribute("value"):m!=null&&(m!==t[i]||y=="progress"&&!m||y=="option"&&m!=f[i])&&Q(t,i,m,f[i],o),i="checked",k!=null&&k!=t[i]&&Q(t,i,k,f[i],o))}return t}function Ie(t,e,n){try{if(typeof t=="function"){var a=typeof t.__u=="function";a&&t.__u(),a&&e==null||(t.__u=t(e))}else t.current=e}catch(o){v.__e(o,n)}}function ct(t,e,n){var a,o;if(v.unmount&&v.unmount(t),(a=t.ref)&&(a.current&&a.current!=t.__e||Ie(a,null,e)),(a=t.__c)!=null){if(a.componentWillUnmount)try{a.componentWillUnmount()}catch(r){v.__e(r,e)}a.base=a.__P=a.__n=null}if(a=t.__k)for(o=0;o<a.length;o++)a[o]&&ct(a[o],e,n||typeof t.type!="function");n||xe(t.__e),t.__c=t.__=t.__e=void 0}function Ct(t,e,n){return this.constructor(t,n)}function It(t,e,n){var a,o,r,s;e==document&&(e=document.documentElement),v.__&&v.__(t,e),o=(a=!1)?null:e.__k,r=[],s=[],Ce(e,t=e.__k=nt(de,null,[t]),o||ae,ae,e.namespaceURI,o?null:e.firstChild?le.call(e.childNodes):null,r,o?o.__e:e.firstChild,a,s),it(r,t,s),t.props.children=null}le=oe.slice,v={__e:function(t,e,n,a){for(var o,r,s;e=e.__;)if((o=e.__c)&&!o.__)try{if((r=o.constructor)&&r.getDerivedStateFromError!=null&&(o.setState(r.getDerivedStateFromError(t)),s=o.__d),o.componentDidCatch!=null&&(o.componentDidCatch(t,a||{}),s=o.__d),s)return o.__E=o}catch(c){t=c}throw t}},Ze=0,te.prototype.setState=function(t,e){var n;n=this.__s!=null&&this.__s!=this.state?this.__s:this.__s=D({},this.state),typeof t=="function"&&(t=t(D({},n),this.props)),t&&D(n,t),t!=null&&this.__v&&(e&&this._sb.push(e),De(this))},te.prototype.forceUpdate=function(t){this.__v&&(this.__e=!0,t&&this.__h.push(t),De(this))},te.prototype.render=de,M=[],Xe=typeof Promise=="function"?Promise.prototype.then.bind(Promise.resolve()):setTimeout,et=function(t,e){return t.__v.__b-e.__v.__b},re.__r=0,pe=Math.random().toString(8),X="__d"+pe,J="__a"+pe,tt=/(PointerCapture)$|Capture$/i,Se=0,he=Ue(!1),fe=Ue(!0);var V,w,$e,Re,G=0,dt=[],S=v,je=S.__b,Le=S.__r,qe=S.diffed,Oe=S.__c,He=S.unmount,Fe=S.__;function Ne(t,e){S.__h&&S.__h(w,t,G||e),G=0;var n=w.__H||(w.__H={__:[],__h:[]});return t>=n.__.length&&n.__.push({}),n.__[t]}function g(t){return G=1,Nt(_t,t)}function Nt(t,e,n){var a=Ne(V++,2);if(a.t=t,!a.__c&&(a.__=[_t(void 0,e),function(c){var u=a.__N?a.__N[0]:a.__[0],i=a.t(u,c);u!==i&&(a.__N=[i,a.__[1]],a.__c.setState({}))}],a.__c=w,!w.__f)){var o=function(c,u,i){if(!a.__c.__H)return!0;var d=!1,p=a.__c.props!==c;if(a.__c.__H.__.some(function($){if($.__N){d=!0;var m=$.__[0];$.__=$.__N,$.__N=void 0,m!==$.__[0]&&(p=!0)}}),r){var l=r.call(this,c,u,i);return d?l||p:l}return!d||p};w.__f=!0;var r=w.shouldComponentUpdate,s=w.componentWillUpdate;w.componentWillUpdate=function(c,u,i){if(this.__e){var d=r;r=void 0,o(c,u,i),r=d}s&&s.call(this,c,u,i)},w.shouldComponentUpdate=o}return a.__N||a.__}function O(t,e){var n=Ne(V++,3);!S.__s&&ut(n.__H,e)&&(n.__=t,n.u=e,w.__H.__h.push(n))}function se(t){return G=5,F(function(){return{current:t}},[])}function F(t,e){var n=Ne(V++,7);return ut(n.__H,e)&&(n.__=t(),n.__H=e,n.__h=t),n.__}function Et(t,e){return G=8,F(function(){return t},e)}function Pt(){for(var t;t=dt.shift();){var e=t.__H;if(t.__P&&e)try{e.__h.some(ne),e.__h.some(ye),e.__h=[]}catch(n){e.__h=[],S.__e(n,t.__v)}}}S.__b=function(t){w=null,je&&je(t)},S.__=function(t,e){t&&e.__k&&e.__k.__m&&(t.__m=e.__k.__m),Fe&&Fe(t,e)},S.__r=function(t){Le&&Le(t),V=0;var e=(w=t.__c).__H;e&&($e===w?(e.__h=[],w.__h=[],e.__.some(function(n){n.__N&&(n.__=n.__N),n.u=n.__N=void 0})):(e.__h.some(ne),e.__h.some(ye),e.__h=[],V=0)),$e=w},S.diffed=function(t){qe&&qe(t);var e=t.__c;e&&e.__H&&(e.__H.__h.length&&(dt.push(e)!==1&&Re===S.requestAnimationFrame||((Re=S.requestAnimationFrame)||Tt)(Pt)),e.__H.__.some(function(n){n.u&&(n.__H=n.u,n.u=void 0)})),$e=w=null},S.__c=function(t,e){e.some(function(n){try{n.__h.some(ne),n.__h=n.__h.filter(function(a){return!a.__||ye(a)})}catch(a){e.some(function(o){o.__h&&(o.__h=[])}),e=[],S.__e(a,n.__v)}}),Oe&&Oe(t,e)},S.unmount=function(t){He&&He(t);var e,n=t.__c;n&&n.__H&&(n.__H.__.some(function(a){try{ne(a)}catch(o){e=o}}),n.__H=void 0,e&&S.__e(e,n.__v))};var Be=typeof requestAnimationFrame=="function";function Tt(t){var e,n=function(){clearTimeout(a),Be&&cancelAnimationFrame(e),setTimeout(t)},a=setTimeout(n,35);Be&&(e=requestAnimationFrame(n))}function ne(t){var e=w,n=t.__c;typeof n=="function"&&(t.__c=void 0,n()),w=e}function ye(t){var e=w;t.__c=t.__(),w=e}function ut(t,e){return!t||t.length!==e.length||e.some(function(n,a){return n!==t[a]})}function _t(t,e){return typeof e=="function"?e(t):e}const be="muisti.key";class ze extends Error{constructor(e,n,a){super(a),this.status=e,this.code=n}}function pt(){return sessionStorage.getItem(be)||""}function $t(t){t?sessionStorage.setItem(be,t):sessionStorage.removeItem(be)}const ge=new Set;function At(t){return ge.add(t),()=>ge.delete(t)}function Dt(t){const e=new URLSearchParams;for(const[a,o]of Object.entries(t||{}))o==null||o===""||(Array.isArray(o)?o.filter(r=>r!=="").forEach(r=>e.append(a,r)):e.append(a,String(o)));const n=e.toString();return n?`?${n}`:""}async function ue(t,e,{params:n,body:a,headers:o}={}){const r={Accept:"application/json",...o||{}},s=pt();s&&(r.Authorization=`Bearer ${s}`),a!==void 0&&(r["Content-Type"]="application/json");let c;try{c=await fetch(e+Dt(n),{method:t,headers:r,body:a===void 0?void 0:JSON.stringify(a)})}catch(d){throw new ze(0,"unreachable",`the server could not be reached (${d.message})`)}if(c.status===204)return null;const u=await c.text();let i=null;try{i=u?JSON.parse(u):null}catch{i=null}if(!c.ok){const d=i&&i.error,p=new ze(c.status,d&&d.code||"error",d&&d.message||`${c.status} ${c.statusText}`);throw c.status===401&&ge.forEach(l=>l(p)),p}return i}const I=(t,e)=>ue("GET",t,{params:e}),B=(t,e,n)=>ue("POST",t,{body:e??{},params:n}),Mt=(t,e,n)=>ue("PATCH",t,{body:e,headers:n}),Ee=(t,e)=>ue("DELETE",t,{params:e}),ve="/ui";function Ke(){return{page:(location.pathname.startsWith(ve)?location.pathname.slice(ve.length):"").replace(/^\/+|\/+$/g,"")||"memories",params:new URLSearchParams(location.search)}}const ke=new Set;function E(t,e={},{replace:n=!1}={}){const a=new URLSearchParams;for(const[s,c]of Object.entries(e))c==null||c===""||c===!1||(Array.isArray(c)?c.forEach(u=>u!==""&&a.append(s,u)):a.append(s,String(c)));const o=a.toString(),r=`${ve}/${t}${o?`?${o}`:""}`;r!==location.pathname+location.search&&(n?history.replaceState(null,"",r):history.pushState(null,"",r),ke.forEach(s=>s()))}function Ut(){const[t,e]=g(Ke);return O(()=>{const n=()=>e(Ke());return ke.add(n),addEventListener("popstate",n),()=>{ke.delete(n),removeEventListener("popstate",n)}},[]),t}function R(t,e=[]){const n={};for(const a of new Set(t.keys()))n[a]=e.includes(a)?t.getAll(a):t.get(a);return n}const Rt=(function(){const e=typeof document<"u"&&document.createElement("link").relList;return e&&e.supports&&e.supports("modulepreload")?"modulepreload":"preload"})(),jt=function(t){return"/ui/"+t},We={},Lt=function(e,n,a){let o=Promise.resolve();if(n&&n.length>0){let i=function(d){return Promise.all(d.map(p=>Promise.resolve(p).then(l=>({status:"fulfilled",value:l}),l=>({status:"rejected",reason:l}))))};var s=i;document.getElementsByTagName("link");const c=document.querySelector("meta[property=csp-nonce]"),u=c?.nonce||c?.getAttribute("nonce");o=i(n.map(d=>{if(d=jt(d),d in We)return;We[d]=!0;const p=d.endsWith(".css"),l=p?'[rel="stylesheet"]':"";if(document.querySelector(`link[href="${d}"]${l}`))return;const $=document.createElement("link");if($.rel=p?"stylesheet":Rt,p||($.as="script"),$.crossOrigin="",$.href=d,u&&$.setAttribute("nonce",u),document.head.appendChild($),p)return new Promise((m,k)=>{$.addEventListener("load",m),$.addEventListener("error",()=>k(new Error(`Unable to preload CSS for ${d}`)))})}))}function r(c){const u=new Event("vite:preloadError",{cancelable:!0});if(u.payload=c,window.dispatchEvent(u),!u.defaultPrevented)throw c}return o.then(c=>{for(const u of c||[])u.status==="rejected"&&r(u.reason);return e().catch(r)})};var mt=function(t,e,n,a){var o;e[0]=0;for(var r=1;r<e.length;r++){var s=e[r++],c=e[r]?(e[0]|=s?1:2,n[e[r++]]):e[++r];s===3?a[0]=c:s===4?a[1]=Object.assign(a[1]||{},c):s===5?(a[1]=a[1]||{})[e[++r]]=c:s===6?a[1][e[++r]]+=c+"":s?(o=t.apply(c,mt(t,c,n,["",null])),a.push(o),c[0]?e[0]|=2:(e[r-2]=0,e[r]=o)):a.push(c)}return a},Je=new Map;function qt(t){var e=Je.get(this);return e||(e=new Map,Je.set(this,e)),(e=mt(this,e.get(t)||(e.set(t,e=(function(n){for(var a,o,r=1,s="",c="",u=[0],i=function(l){r===1&&(l||(s=s.replace(/^\s*\n\s*|\s*\n\s*$/g,"")))?u.push(0,l,s):r===3&&(l||s)?(u.push(3,l,s),r=2):r===2&&s==="..."&&l?u.push(4,l,0):r===2&&s&&!l?u.push(5,0,!0,s):r>=5&&((s||!l&&r===5)&&(u.push(r,0,s,o),r=6),l&&(u.push(r,l,0,o),r=6)),s=""},d=0;d<n.length;d++){d&&(r===1&&i(),i(d));for(var p=0;p<n[d].length;p++)a=n[d][p],r===1?a==="<"?(i(),u=[u],r=3):s+=a:r===4?s==="--"&&a===">"?(r=1,s=""):s=a+s[0]:c?a===c?c="":s+=a:a==='"'||a==="'"?c=a:a===">"?(i(),r=1):r&&(a==="="?(r=5,o=s,s=""):a==="/"&&(r<5||n[d][p+1]===">")?(i(),r===3&&(u=u[0]),r=u,(u=u[0]).push(2,0,r),r=0):a===" "||a==="	"||a===`
`||a==="\r"?(i(),r=2):s+=a),r===3&&s==="!--"&&(r=4,u=u[0])}return i(),u})(t)),e),arguments,[])).length>1?e:e[0]}const _=qt.bind(nt),ht=["scratch","short_term","long_term","episodic","declarative"],Ot=["active","archived","superseded"],Ht=["fact","preference","rule"];function N(t,e){const[n,a]=g({data:null,error:null,loading:!0}),o=se(0),r=Et(()=>{const s=++o.current;a(c=>({...c,loading:!0,error:null})),Promise.resolve().then(t).then(c=>s===o.current&&a({data:c,error:null,loading:!1}),c=>s===o.current&&a({data:null,error:c,loading:!1}))},e);return O(r,[r]),{...n,reload:r}}function x({error:t}){if(!t)return null;const e=t.code?_`<code>${t.code}</code> `:"";return _`<div class="error" role="alert">${e}${t.message||String(t)}</div>`}function A({children:t}){return _`<p class="notice" role="status">${t}</p>`}let Ft=0;function ft(t){const e=se(null);return e.current||(e.current=`${t}-${++Ft}`),e.current}function b({label:t,value:e,onInput:n,type:a="text",placeholder:o,name:r,list:s,...c}){const u=ft(r||"f");return _`<label class="field" for=${u}>
    <span>${t}</span>
    <input id=${u} name=${r} type=${a} value=${e??""} placeholder=${o}
      list=${s} onInput=${i=>n(i.currentTarget.value)} ...${c} />
  </label>`}function j({label:t,value:e,onChange:n,options:a,name:o,any:r="any"}){const s=ft(o||"s");return _`<label class="field" for=${s}>
    <span>${t}</span>
    <select id=${s} name=${o} value=${e??""} onChange=${c=>n(c.currentTarget.value)}>
      ${r!==null&&_`<option value="">${r}</option>`}
      ${a.map(c=>_`<option value=${c}>${c}</option>`)}
    </select>
  </label>`}function Pe(){const[t,e]=g(null),[n,a]=g(null),[o,r]=g(!1),s=(d,p,l="Delete")=>{a(null),e({message:d,action:p,label:l})},c=()=>e(null),u=async()=>{r(!0);try{await t.action(),e(null)}catch(d){a(d)}finally{r(!1)}};return[t?_`<div class="backdrop">
        <div class="modal" role="dialog" aria-modal="true" aria-labelledby="confirm-title">
          <h2 id="confirm-title">Are you sure?</h2>
          <p>${t.message}</p>
          <${x} error=${n} />
          <div class="actions">
            <button type="button" onClick=${c} disabled=${o}>Cancel</button>
            <button type="button" class="danger" onClick=${u} disabled=${o} autofocus>
              ${t.label}
            </button>
          </div>
        </div>
      </div>`:null,s]}function yt({cursors:t,next:e,onPage:n}){return _`<nav class="pager" aria-label="pages">
    <button type="button" disabled=${!t.length} onClick=${()=>n(t.slice(0,-1))}>
      ← Previous
    </button>
    <span>page ${t.length+1}</span>
    <button type="button" disabled=${!e} onClick=${()=>n([...t,e])}>Next →</button>
  </nav>`}function L(t){return typeof t.content=="string"?t.content:JSON.stringify(t.content)}function P(t){if(!t)return"";const e=new Date(t);return Number.isNaN(e.getTime())?t:e.toISOString().replace("T"," ").slice(0,16)}function z({children:t,kind:e}){return _`<span class=${`badge ${e||""}`}>${t}</span>`}function ie({option:t,label:e,height:n=320,testid:a}){const o=se(null),r=se(null),[s,c]=g(null);return O(()=>{let u=!0;return Lt(async()=>{const{draw:i}=await import("./charts-CVBNsewV.js");return{draw:i}},[]).then(({draw:i})=>{!u||!o.current||(r.current=i(o.current,t),o.current.dataset.drawn="true")},i=>c(i)),()=>{u=!1,r.current&&r.current.dispose(),r.current=null}},[]),O(()=>{r.current&&r.current.update(t)},[t]),s?_`<${x} error=${s} />`:_`<div class="chart" ref=${o} role="img" aria-label=${e} data-testid=${a}
    style=${`height:${n}px`}></div>`}const Ve=50,Bt=["namespace","user_id","agent_id","session_id","scope","category","tag","state","from","to","q","mode"];function Z(t,e){if(!t)return;const n=new Date(`${t}T00:00:00Z`);if(!Number.isNaN(n.getTime()))return e&&n.setUTCDate(n.getUTCDate()+1),n.toISOString()}function zt(t,e){if(t.q){const n={};return t.agent_id&&(n.agent_id=t.agent_id),t.category&&(n.category=t.category),t.scope&&(n.scope=t.scope),t.tag&&t.tag.length&&(n.tags=t.tag),t.from&&(n.created_after=Z(t.from)),t.to&&(n.created_before=Z(t.to,!0)),B("/v1/recall",{query:t.q,namespace:t.namespace||void 0,user_id:t.user_id||void 0,session_id:t.session_id||void 0,mode:t.mode==="semantic"?"vector":"lexical",limit:Ve,filters:n,include_archived:t.state==="archived"}).then(a=>({items:a.hits.map(o=>({...o.memory,_score:o.score}))}))}return I("/v1/memories",{namespace:t.namespace,user_id:t.user_id,agent_id:t.agent_id,session_id:t.session_id,scope:t.scope,category:t.category,tag:t.tag,state:t.state,created_after:Z(t.from),created_before:Z(t.to,!0),cursor:e,limit:Ve})}function Kt({f:t,onApply:e}){const[n,a]=g(t),o=s=>c=>a({...n,[s]:c});return _`<form class="filters" onSubmit=${s=>{s.preventDefault(),e(n)}} aria-label="filters">
    <${b} label="Search" name="q" type="search" value=${n.q} onInput=${o("q")}
      placeholder="words or a question" />
    <${j} label="Search by" name="mode" value=${n.mode} onChange=${o("mode")}
      options=${["semantic"]} any="full text" />
    <${b} label="Namespace" name="namespace" value=${n.namespace} onInput=${o("namespace")} placeholder="default" />
    <${b} label="User" name="user_id" value=${n.user_id} onInput=${o("user_id")} />
    <${b} label="Agent" name="agent_id" value=${n.agent_id} onInput=${o("agent_id")} />
    <${b} label="Session" name="session_id" value=${n.session_id} onInput=${o("session_id")} />
    <${j} label="Scope" name="scope" value=${n.scope} onChange=${o("scope")} options=${ht} />
    <${b} label="Category" name="category" value=${n.category} onInput=${o("category")} />
    <${b} label="Tag" name="tag" value=${(n.tag||[]).join(",")}
      onInput=${s=>o("tag")(s.split(",").map(c=>c.trim()).filter(Boolean))} placeholder="a,b" />
    <${j} label="State" name="state" value=${n.state} onChange=${o("state")} options=${Ot} />
    <${b} label="Created from" name="from" type="date" value=${n.from} onInput=${o("from")} />
    <${b} label="Created to" name="to" type="date" value=${n.to} onInput=${o("to")} />
    <div class="actions"><button type="submit">Apply</button>
      <button type="button" onClick=${()=>{a({}),e({})}}>Clear</button></div>
  </form>`}function Wt({id:t,f:e,onChanged:n,onClose:a,ask:o}){const r=e.user_id||void 0,s=N(()=>I(`/v1/memories/${t}`,{user_id:r}),[t,r]),c=N(()=>I(`/v1/memories/${t}/history`,{user_id:r}),[t,r]),[u,i]=g(null),[d,p]=g(null),[l,$]=g(!1);if(s.error)return _`<section class="detail" aria-label="memory"><${x} error=${s.error} />
    <button type="button" onClick=${a}>Close</button></section>`;if(!s.data)return _`<section class="detail" aria-label="memory"><p class="loading">Loading…</p></section>`;const m=s.data,k=async h=>{h.preventDefault(),p(null);try{const y={content:u.content,importance:Number(u.importance),tags:u.tags.split(",").map(C=>C.trim()).filter(Boolean),expected_version:m.version};u.category&&u.category!==m.category&&(y.category=u.category),m.scope==="declarative"&&m.user_id&&(y.user_id=m.user_id),await Mt(`/v1/memories/${t}`,y),i(null),$(!0),s.reload(),c.reload(),n()}catch(y){p(y)}},f=()=>o(`Delete this memory? "${L(m).slice(0,120)}"`,async()=>{await Ee(`/v1/memories/${t}`,{user_id:m.scope==="declarative"?m.user_id:r}),n(),a()});return _`<section class="detail" aria-labelledby="detail-title">
    <div class="row"><h2 id="detail-title">Memory</h2>
      <button type="button" onClick=${a}>Close</button></div>
    ${l&&_`<${A}>Saved.</${A}>`}
    ${u?_`<form onSubmit=${k} class="edit" aria-label="edit memory">
          <label class="field wide" for="edit-content"><span>Content</span>
            <textarea id="edit-content" rows="4" value=${u.content}
              onInput=${h=>i({...u,content:h.currentTarget.value})}></textarea></label>
          <${b} label="Category" name="edit-category" value=${u.category}
            onInput=${h=>i({...u,category:h})} />
          <${b} label="Tags" name="edit-tags" value=${u.tags} onInput=${h=>i({...u,tags:h})} />
          <${b} label="Importance" name="edit-importance" type="number" min="0" max="1" step="0.05"
            value=${u.importance} onInput=${h=>i({...u,importance:h})} />
          <${x} error=${d} />
          <div class="actions"><button type="submit">Save</button>
            <button type="button" onClick=${()=>i(null)}>Cancel</button></div>
        </form>`:_`<p class="content">${L(m)}</p>
        <div class="actions">
          <button type="button" onClick=${()=>{$(!1),i({content:L(m),category:m.category,tags:(m.tags||[]).join(", "),importance:m.importance})}}>Edit</button>
          <button type="button" class="danger" onClick=${f}>Delete</button>
        </div>`}
    <dl class="fields">
      ${[["id",m.id],["namespace",m.namespace],["scope",m.scope],["category",m.category],["state",m.state],["user",m.user_id],["agent",m.agent_id],["session",m.session_id],["tags",(m.tags||[]).join(", ")],["importance",m.importance],["confidence",m.confidence],["source",m.source],["created",P(m.created_at)],["updated",P(m.updated_at)],["accessed",m.access_count],["version",m.version]].filter(([,h])=>h!=null&&h!=="").map(([h,y])=>_`<dt>${h}</dt><dd>${String(y)}</dd>`)}
    </dl>
    <h3>History</h3>
    ${c.error?_`<${x} error=${c.error} />`:c.data&&c.data.history.length?_`<ol class="history">${c.data.history.map(h=>_`<li>
            <${z}>${h.event}</${z}> ${P(h.at)} by ${h.actor}
            ${h.old?_`<div><del>${h.old}</del></div>`:""}${h.new?_`<div><ins>${h.new}</ins></div>`:""}
          </li>`)}</ol>`:_`<p class="muted">No recorded changes.</p>`}
  </section>`}function Jt({params:t}){const e=R(t,["tag","c"]),n=e.c||[],a=Object.fromEntries(Bt.map(f=>[f,e[f]])),[o,r]=g(new Set),[s,c]=g(null),[u,i]=Pe(),d=N(()=>zt(a,n[n.length-1]),[t.toString()]),p=(f,h={})=>E("memories",{...f,...h}),l=d.data&&d.data.items||[],$=f=>{const h=new Set(o);h.has(f)?h.delete(f):h.add(f),r(h)},m=()=>i(`Delete ${o.size} selected memories? This cannot be undone.`,async()=>{const f=new Map(l.map(y=>[y.id,y]));let h=0;for(const y of o){const C=f.get(y);await Ee(`/v1/memories/${y}`,{user_id:C&&C.scope==="declarative"?C.user_id:void 0}),h+=1}r(new Set),c(`Deleted ${h} memories.`),d.reload()},`Delete ${o.size}`),k=!!a.q;return _`<h1>Memories</h1>
    <${Kt} f=${a} onApply=${f=>{r(new Set),p(f)}} />
    ${s&&_`<${A}>${s}</${A}>`}
    <${x} error=${d.error} />
    <div class="split">
      <section class="list" aria-label="memories">
        <div class="row">
          <span class="muted" aria-live="polite">${d.loading?"Loading…":`${l.length} ${k?"best matches":"on this page"}`}</span>
          <button type="button" class="danger" disabled=${!o.size} onClick=${m}>
            Delete selected (${o.size})</button>
        </div>
        <table>
          <thead><tr><th scope="col"><span class="sr-only">Select</span></th><th scope="col">Memory</th>
            ${k&&_`<th scope="col">Score</th>`}
            <th scope="col">Scope</th><th scope="col">User</th><th scope="col">State</th><th scope="col">Created</th></tr></thead>
          <tbody>
            ${l.map(f=>_`<tr key=${f.id} class=${e.id===f.id?"current":""}>
              <td><input type="checkbox" aria-label=${`select ${f.id}`} checked=${o.has(f.id)}
                onChange=${()=>$(f.id)} /></td>
              <td><a href=${`/ui/memories?${Vt(t,"id",f.id)}`}
                onClick=${h=>{h.preventDefault(),p(R(t,["tag","c"]),{id:f.id})}}
                class="memtext">${L(f).slice(0,200)}</a></td>
              ${k&&_`<td>${f._score.toFixed(3)}</td>`}
              <td>${f.scope}</td><td>${f.user_id||""}</td><td>${f.state}</td><td>${P(f.created_at)}</td>
            </tr>`)}
          </tbody>
        </table>
        ${!d.loading&&!l.length&&!d.error&&_`<p class="muted">No memories match.</p>`}
        ${!k&&_`<${yt} cursors=${n} next=${d.data&&d.data.next_cursor}
          onPage=${f=>p({...a,c:f})} />`}
      </section>
      ${e.id&&_`<${Wt} key=${e.id} id=${e.id} f=${a} ask=${i}
        onChanged=${()=>d.reload()}
        onClose=${()=>p(R(t,["tag","c"]),{id:void 0})} />`}
    </div>
    ${u}`}function Vt(t,e,n){const a=new URLSearchParams(t);return a.set(e,n),a}const Gt=[["relevance","relevance"],["lexical","lexical_score"],["vector","similarity"],["graph","graph"],["recency","recency"],["access","access"],["importance","importance"]];function Yt({label:t,value:e,raw:n}){if(e==null)return _`<span class="sig none">${t} —</span>`;const a=Math.max(0,Math.min(1,e))*100;return _`<span class="sig" title=${`${t}: ${n??e}`}>
    <span class="siglabel">${t}</span>
    <span class="bar" role="img" aria-label=${`${t} ${Number(n??e).toFixed(3)}`}>
      <span style=${`width:${a.toFixed(1)}%`}></span></span>
    <span class="num">${Number(n??e).toFixed(3)}</span></span>`}function Qt({params:t}){const e=R(t),[n,a]=g({limit:"10",...e}),o=i=>d=>a({...n,[i]:d}),r=N(()=>{if(!e.query)return Promise.resolve(null);const i={};return e.scope&&(i.scope=e.scope),e.category&&(i.category=e.category),e.agent_id&&(i.agent_id=e.agent_id),B("/v1/recall",{query:e.query,namespace:e.namespace||void 0,user_id:e.user_id||void 0,session_id:e.session_id||void 0,limit:e.limit?Number(e.limit):void 0,mode:e.mode||void 0,min_score:e.min_score?Number(e.min_score):void 0,include_archived:e.include_archived==="true",cluster:e.cluster?Number(e.cluster):void 0,filters:i,explain:!0})},[t.toString()]),s=i=>{i.preventDefault(),E("recall",n)},c=r.data&&r.data.hits||[],u=Math.max(1e-9,...c.map(i=>i.signals&&i.signals.lexical_score||0));return _`<h1>Recall playground</h1>
    <form class="filters" onSubmit=${s} aria-label="recall request">
      <${b} label="Query" name="query" type="search" value=${n.query} onInput=${o("query")} required
        placeholder="what the agent is asked" class="wide" />
      <${b} label="Namespace" name="namespace" value=${n.namespace} onInput=${o("namespace")} placeholder="default" />
      <${b} label="User" name="user_id" value=${n.user_id} onInput=${o("user_id")} />
      <${b} label="Session" name="session_id" value=${n.session_id} onInput=${o("session_id")} />
      <${b} label="Agent" name="agent_id" value=${n.agent_id} onInput=${o("agent_id")} />
      <${j} label="Mode" name="mode" value=${n.mode} onChange=${o("mode")}
        options=${["hybrid","lexical","vector","overlap"]} any="default (hybrid)" />
      <${j} label="Scope" name="scope" value=${n.scope} onChange=${o("scope")} options=${ht} />
      <${b} label="Category" name="category" value=${n.category} onInput=${o("category")} />
      <${b} label="Limit" name="limit" type="number" min="1" max="100" value=${n.limit} onInput=${o("limit")} />
      <${b} label="Min score" name="min_score" type="number" min="0" max="1" step="0.05"
        value=${n.min_score} onInput=${o("min_score")} />
      <${b} label="Cluster" name="cluster" type="number" min="0" value=${n.cluster} onInput=${o("cluster")} />
      <label class="field check" for="inc-arch"><input id="inc-arch" type="checkbox"
        checked=${n.include_archived==="true"} onChange=${i=>o("include_archived")(i.currentTarget.checked?"true":"")} />
        <span>Include archived</span></label>
      <div class="actions"><button type="submit">Recall</button></div>
    </form>
    <${x} error=${r.error} />
    ${r.loading&&e.query&&_`<p class="loading">Recalling…</p>`}
    ${r.data&&_`<section aria-label="hits">
      <p class="muted" aria-live="polite">${c.length} hits</p>
      <ol class="hits">${c.map(i=>_`<li key=${i.memory.id}>
        <div class="row"><a href=${`/ui/memories?id=${i.memory.id}${i.memory.user_id?`&user_id=${encodeURIComponent(i.memory.user_id)}`:""}`}
          class="memtext">${L(i.memory)}</a><strong class="score">${i.score.toFixed(3)}</strong></div>
        <div class="signals">${Gt.map(([d,p])=>{const $=(i.signals||{})[p],m=p==="lexical_score"&&$!==void 0?$/u:$;return _`<${Yt} label=${d} value=${m} raw=${$} />`})}
        ${i.signals&&i.signals.lexical_rank&&_`<span class="muted">lexical rank ${i.signals.lexical_rank}</span>`}
        ${i.signals&&i.signals.vector_rank&&_`<span class="muted"> · vector rank ${i.signals.vector_rank}</span>`}
        </div>
        <div class="muted">${i.memory.scope} · ${i.memory.user_id||"no user"} · ${i.memory.created_at}</div>
      </li>`)}</ol></section>`}`}function Zt({id:t,user:e}){const n=N(()=>I(`/v1/memories/${t}/history`,{user_id:e}),[t,e]);return n.error?_`<${x} error=${n.error} />`:n.data?n.data.history.length?_`<ol class="history">${n.data.history.map(a=>_`<li>
    <${z}>${a.event}</${z}> ${P(a.at)} by ${a.actor}
    ${a.confidence!==void 0&&a.confidence!==null?` · confidence ${a.confidence}`:""}
    ${a.old?_`<div><del>${a.old}</del></div>`:""}${a.new?_`<div><ins>${a.new}</ins></div>`:""}
  </li>`)}</ol>`:_`<p class="muted">No recorded changes.</p>`:_`<p class="loading">Loading…</p>`}function Ge({f:t,state:e,title:n,cursors:a,onPage:o}){const[r,s]=g(null),c=N(()=>I("/v1/memories",{namespace:t.namespace,user_id:t.user_id,scope:"declarative",category:t.type,state:e,cursor:a[a.length-1],limit:50}),[t.namespace,t.user_id,t.type,e,a.join()]),u=c.data&&c.data.items||[],i=`${e}-title`;return _`<section aria-labelledby=${i}>
    <h2 id=${i}>${n}</h2>
    <${x} error=${c.error} />
    <table><thead><tr><th scope="col">Entry</th><th scope="col">Type</th><th scope="col">Confidence</th>
      <th scope="col">Source</th><th scope="col">${e==="superseded"?"Replaced by":"Updated"}</th></tr></thead>
    <tbody>${u.map(d=>_`<tr key=${d.id}>
      <td><button type="button" class="link" aria-expanded=${r===d.id}
        onClick=${()=>s(r===d.id?null:d.id)}>${d.content}</button>
        ${r===d.id&&_`<${Zt} id=${d.id} user=${t.user_id} />`}</td>
      <td>${d.type||d.category}</td>
      <td>${d.confidence??"stated"}</td><td>${d.source}</td>
      <td>${e==="superseded"?_`<a href=${`/ui/memories?id=${d.superseded_by}&user_id=${encodeURIComponent(t.user_id)}`}>${d.superseded_by}</a>`:P(d.updated_at)}</td></tr>`)}</tbody></table>
    ${!c.loading&&!u.length&&!c.error&&_`<p class="muted">None.</p>`}
    ${a&&_`<${yt} cursors=${a} next=${c.data&&c.data.next_cursor} onPage=${o} />`}
  </section>`}function Xt({f:t,onDecided:e}){const n=N(()=>I("/v1/proposals",{user_id:t.user_id}),[t.user_id]),[a,o]=Pe(),[r,s]=g(null),[c,u]=g(null),i=n.data&&n.data.proposals||[],d=async l=>{u(null);try{await B(`/v1/proposals/${l.id}/confirm`),s(`Accepted: ${l.content}`),n.reload(),e()}catch($){u($)}},p=l=>o(`Reject the proposal "${l.content}"?`,async()=>{await B(`/v1/proposals/${l.id}/reject`),s(`Rejected: ${l.content}`),n.reload()},"Reject");return _`<section aria-labelledby="pending-title">
    <h2 id="pending-title">Pending confirmations</h2>
    ${r&&_`<${A}>${r}</${A}>`}
    <${x} error=${n.error||c} />
    ${!n.loading&&!i.length&&!n.error&&_`<p class="muted">Nothing waits for confirmation.</p>`}
    <ul class="proposals">${i.map(l=>_`<li key=${l.id}>
      <div><strong>${l.content}</strong> <${z}>${l.type||l.kind}</${z}>
        <span class="muted"> from ${l.source}${l.agent_id?` (${l.agent_id})`:""}, confidence ${l.confidence??"—"},
        expires ${P(l.expires_at)}</span></div>
      ${l.supersedes&&_`<div class="muted">would replace: <del>${l.supersedes.content}</del></div>`}
      <div class="actions"><button type="button" onClick=${()=>d(l)}>Accept</button>
        <button type="button" class="danger" onClick=${()=>p(l)}>Reject</button></div>
    </li>`)}</ul>
    ${a}
  </section>`}function en({params:t}){const e=R(t,["c","sc"]),[n,a]=g(e),[o,r]=g(0),s=c=>u=>a({...n,[c]:u});return _`<h1>Declarative memory</h1>
    <form class="filters" aria-label="filters" onSubmit=${c=>{c.preventDefault(),E("declarative",n)}}>
      <${b} label="User" name="user_id" value=${n.user_id} onInput=${s("user_id")} required />
      <${b} label="Namespace" name="namespace" value=${n.namespace} onInput=${s("namespace")} placeholder="default" />
      <${j} label="Type" name="type" value=${n.type} onChange=${s("type")} options=${Ht} />
      <div class="actions"><button type="submit">Show</button></div>
    </form>
    ${e.user_id?_`<${Xt} f=${e} onDecided=${()=>r(o+1)} />
        <${Ge} key=${`a${o}`} f=${e} state="active" title="Entries" cursors=${e.c||[]}
          onPage=${c=>E("declarative",{...e,c})} />
        <${Ge} key=${`s${o}`} f=${e} state="superseded" title="Superseded" cursors=${e.sc||[]}
          onPage=${c=>E("declarative",{...e,sc:c})} />`:_`<p class="muted">Declarative entries belong to one user: name the user.</p>`}`}const we=400;function tn(t){const e=new Map,n=(o,r)=>{e.has(o)||e.set(o,{name:o,value:0,category:r?1:0}),e.get(o).value+=1},a=t.slice(0,we).map(o=>(n(o.subject,!1),n(o.object,!o.object_id),{source:o.subject,target:o.object,value:o.predicate}));return{tooltip:{},legend:[{data:["entity","value"]}],series:[{type:"graph",layout:"force",roam:!0,draggable:!0,categories:[{name:"entity"},{name:"value"}],data:[...e.values()].map(o=>({...o,symbolSize:12+Math.min(24,o.value*3)})),links:a,label:{show:!0,position:"right"},edgeLabel:{show:!0,formatter:o=>o.data.value,fontSize:10},edgeSymbol:["none","arrow"],force:{repulsion:160,edgeLength:110}}]}}function nn({params:t}){const e=R(t),[n,a]=g(e),o=l=>$=>a({...n,[l]:$}),r=e.as_of?new Date(e.as_of).toISOString():void 0,s=N(()=>I("/v1/graph/relations",{user_id:e.user_id,as_of:r,entity:e.entity,hops:e.entity?e.hops:void 0}),[t.toString()]),c=N(()=>I("/v1/graph/entities",{user_id:e.user_id}),[e.user_id]),u=s.data&&s.data.relations||[],i=F(()=>tn(u),[s.data]),d=c.data&&c.data.entities||[],p=l=>E("graph",{...e,entity:l});return _`<h1>Knowledge graph</h1>
    <form class="filters" aria-label="graph filters" onSubmit=${l=>{l.preventDefault(),E("graph",n)}}>
      <${b} label="User" name="user_id" value=${n.user_id} onInput=${o("user_id")} />
      <${b} label="As of" name="as_of" type="datetime-local" value=${n.as_of} onInput=${o("as_of")} />
      <${b} label="Entity" name="entity" value=${n.entity} onInput=${o("entity")} list="entity-names" />
      <datalist id="entity-names">${d.slice(0,500).map(l=>_`<option value=${l.name} />`)}</datalist>
      <${j} label="Hops" name="hops" value=${n.hops} onChange=${o("hops")} options=${["1","2","3"]} any="1" />
      <div class="actions"><button type="submit">Show</button>
        ${e.entity&&_`<button type="button" onClick=${()=>E("graph",{...e,entity:void 0,hops:void 0})}>
          Whole graph</button>`}</div>
    </form>
    <${x} error=${s.error||c.error} />
    <p class="muted" aria-live="polite">${s.loading?"Loading…":`${u.length} relations, ${d.length} entities${e.as_of?`, as of ${P(r)}`:", as they hold now"}`}
      ${u.length>we?` (the first ${we} drawn)`:""}</p>
    ${u.length>0&&_`<${ie} option=${i} height=${480} testid="graph"
      label=${`graph of ${u.length} relations between ${d.length} entities`} />`}
    <section aria-labelledby="rel-title"><h2 id="rel-title">Relations</h2>
      <table class="relations"><thead><tr><th scope="col">Subject</th><th scope="col">Predicate</th>
        <th scope="col">Object</th><th scope="col">Valid from</th><th scope="col">Until</th><th scope="col">Confidence</th></tr></thead>
      <tbody>${u.map(l=>_`<tr key=${l.id}>
        <td><button type="button" class="link" onClick=${()=>p(l.subject)}>${l.subject}</button></td>
        <td>${l.predicate}</td>
        <td>${l.object_id?_`<button type="button" class="link" onClick=${()=>p(l.object)}>${l.object}</button>`:l.object}</td>
        <td>${P(l.valid_at||l.created_at)}</td><td>${P(l.invalid_at)}</td><td>${l.confidence.toFixed(2)}</td>
      </tr>`)}</tbody></table>
      ${!s.loading&&!u.length&&!s.error&&_`<p class="muted">No relations${e.user_id?"":" for memories without a user; name a user"}.</p>`}
    </section>`}function bt(t){const e=[],n=new Date;for(let a=t-1;a>=0;a--){const o=new Date(Date.UTC(n.getUTCFullYear(),n.getUTCMonth(),n.getUTCDate()-a));e.push(o.toISOString().slice(0,10))}return e}function an(t,e){const n=bt(e),a=[...new Set(t.growth.map(o=>o.scope))];return{tooltip:{trigger:"axis"},legend:{data:a},grid:{left:48,right:16,bottom:48},xAxis:{type:"category",data:n},yAxis:{type:"value",name:"created"},series:a.map(o=>{const r=new Map(t.growth.filter(s=>s.scope===o).map(s=>[s.day,s.count]));return{name:o,type:"bar",stack:"scope",data:n.map(s=>r.get(s)||0)}})}}function on(t,e){const n=bt(e),a=new Map(t.last_accessed.map(o=>[o.day,o.count]));return{tooltip:{trigger:"axis"},grid:{left:48,right:16,bottom:48},xAxis:{type:"category",data:n},yAxis:{type:"value",name:"last accessed"},series:[{name:"memories last accessed",type:"line",areaStyle:{},data:n.map(o=>a.get(o)||0)}]}}function rn(t){const e=t.items.map((r,s)=>`${s+1}. ${L(r).slice(0,28)}`),n=[];let a=1;t.matrix.forEach((r,s)=>r.forEach((c,u)=>{n.push([u,s,Number(c.toFixed(3))]),s!==u&&(a=Math.min(a,c))}));const o=Math.max(-1,Math.floor(a*10)/10);return{tooltip:{formatter:r=>`${e[r.value[1]]}<br>${e[r.value[0]]}<br>similarity ${r.value[2]}`},grid:{left:220,right:24,top:16,bottom:120},xAxis:{type:"category",data:e.map((r,s)=>String(s+1))},yAxis:{type:"category",data:e,inverse:!0,axisLabel:{width:200,overflow:"truncate"}},visualMap:{min:o,max:1,calculable:!0,orient:"horizontal",left:"center",bottom:8},series:[{type:"heatmap",data:n,progressive:0}]}}function me({title:t,counts:e}){return _`<div class="card"><h3>${t}</h3><dl class="fields">
    ${Object.entries(e).map(([n,a])=>_`<dt>${n}</dt><dd>${a}</dd>`)}</dl></div>`}function sn({f:t}){const e=N(()=>I("/v1/analytics/similarity",{user_id:t.user_id,namespace:t.namespace,cluster:t.cluster,limit:20}),[t.user_id,t.namespace,t.cluster]),n=F(()=>e.data&&rn(e.data),[e.data]);return _`<section aria-labelledby="heat-title"><h2 id="heat-title">Similarity of ${t.cluster?`topic ${t.cluster}`:"the first memories"}</h2>
    <${x} error=${e.error} />
    ${e.data&&(e.data.items.length<2?_`<p class="muted">Fewer than two memories to compare.</p>`:_`<${ie} option=${n} height=${560} testid="heatmap"
          label=${`similarity heatmap of ${e.data.items.length} memories`} />`)}
  </section>`}function ln({f:t}){const e=N(()=>I("/v1/clusters",{user_id:t.user_id,namespace:t.namespace}),[t.user_id,t.namespace]),n=e.error&&e.error.status===404;return _`<section aria-labelledby="clusters-title"><h2 id="clusters-title">Topics</h2>
    ${n?_`<p class="muted">Not clustered yet: run the cluster job (Operations).</p>`:_`<${x} error=${e.error} />`}
    ${e.data&&_`<p class="muted">${e.data.clusters.length} topics fitted on ${e.data.fitted_on} memories,
      silhouette ${e.data.silhouette.toFixed(2)}</p>
      <table><thead><tr><th scope="col">Topic</th><th scope="col">Label</th><th scope="col">Size</th><th scope="col"></th></tr></thead>
      <tbody>${e.data.clusters.map(a=>_`<tr key=${a.id}><td>${a.id}</td><td>${a.label}</td><td>${a.size}</td>
        <td><button type="button" class="link" onClick=${()=>E("analytics",{...t,cluster:a.id})}>
          Heatmap of topic ${a.id}</button></td></tr>`)}</tbody></table>`}
  </section>`}function cn({params:t}){const e=R(t),[n,a]=g(e),o=i=>d=>a({...n,[i]:d}),r=Math.min(366,Math.max(1,Number(e.days)||30)),s=N(()=>I("/v1/analytics",{namespace:e.namespace,user_id:e.user_id,scope:e.scope,days:r,top:10}),[e.namespace,e.user_id,e.scope,r]),c=F(()=>s.data&&an(s.data,r),[s.data]),u=F(()=>s.data&&on(s.data,r),[s.data]);return _`<h1>Analytics</h1>
    <form class="filters" aria-label="filters" onSubmit=${i=>{i.preventDefault(),E("analytics",n)}}>
      <${b} label="User" name="user_id" value=${n.user_id} onInput=${o("user_id")} />
      <${b} label="Namespace" name="namespace" value=${n.namespace} onInput=${o("namespace")} placeholder="default" />
      <${b} label="Days" name="days" type="number" min="1" max="366" value=${n.days||"30"} onInput=${o("days")} />
      <div class="actions"><button type="submit">Show</button></div>
    </form>
    <${x} error=${s.error} />
    ${s.loading&&_`<p class="loading">Counting…</p>`}
    ${s.data&&_`<div class="cards">
        <div class="card"><h3>Memories</h3><p class="big">${s.data.total}</p></div>
        <${me} title="By scope" counts=${s.data.by_scope} />
        <${me} title="By state" counts=${s.data.by_state} />
        <${me} title="By category" counts=${s.data.by_category} />
      </div>
      <section aria-labelledby="growth-title"><h2 id="growth-title">Growth per day by scope</h2>
        <${ie} option=${c} testid="growth" label=${`memories created per day over ${r} days, by scope`} /></section>
      <section aria-labelledby="access-title"><h2 id="access-title">Access over time</h2>
        <p class="muted">Memories by the day they were last recalled or read.</p>
        <${ie} option=${u} testid="access" label=${`memories by day of last access over ${r} days`} /></section>
      <section aria-labelledby="top-title"><h2 id="top-title">Most accessed</h2>
        ${s.data.top_accessed.length?_`<table><thead><tr><th scope="col">Memory</th><th scope="col">Accesses</th>
          <th scope="col">User</th></tr></thead><tbody>${s.data.top_accessed.map(i=>_`<tr key=${i.id}>
          <td><a href=${`/ui/memories?id=${i.id}${i.user_id?`&user_id=${encodeURIComponent(i.user_id)}`:""}`}>${L(i).slice(0,160)}</a></td>
          <td>${i.access_count}</td><td>${i.user_id||""}</td></tr>`)}</tbody></table>`:_`<p class="muted">No memory was accessed yet.</p>`}</section>`}
    ${e.user_id?_`<${sn} f=${e} /><${ln} f=${e} />`:_`<${A}>Name a user for the similarity heatmap and their topics.</${A}>`}`}const dn=["expire","consolidate","promote","prune","archive","cluster"];function un(){const t=N(()=>I("/readyz"),[]),e=N(()=>I("/v1/stats"),[]);return _`<section aria-labelledby="health-title"><h2 id="health-title">Store</h2>
    <${x} error=${e.error||t.error} />
    ${e.data&&_`<div class="cards">
      <div class="card"><h3>Health</h3><p class="big">${e.data.healthy&&t.data?"ok":"unavailable"}</p>
        <p class="muted">${e.data.backend} · tenant ${e.data.tenant}</p></div>
      <div class="card"><h3>Memories</h3><p class="big">${e.data.total}</p></div>
      <div class="card"><h3>By namespace</h3><dl class="fields">${e.data.namespaces.map(n=>_`<dt>${n.namespace}</dt><dd>${n.count}</dd>`)}</dl></div></div>`}
  </section>`}function Ye({job:t}){const e=t.total?Math.round(100*t.done/t.total):t.state==="done"?100:0;return _`<progress max="100" value=${e} aria-label=${`job ${t.id} ${e}%`}></progress>
    <span class="muted"> ${t.done} of ${t.total||"?"}</span>`}function _n(){const[t,e]=g({jobs:["expire","consolidate","promote"],user_id:"",dry_run:!1,max_memories:""}),[n,a]=g(null),[o,r]=g(null),s=N(()=>I("/v1/jobs"),[]);O(()=>{if(!o||o.state!=="running")return;const i=setTimeout(async()=>{try{r(await I(`/v1/jobs/${o.id}`))}catch(d){a(d)}},500);return()=>clearTimeout(i)},[o]),O(()=>{o&&o.state!=="running"&&s.reload()},[o&&o.state]);const c=i=>e({...t,jobs:t.jobs.includes(i)?t.jobs.filter(d=>d!==i):[...t.jobs,i]});return _`<section aria-labelledby="maint-title"><h2 id="maint-title">Maintenance</h2>
    <form class="filters" onSubmit=${async i=>{i.preventDefault(),a(null);try{const d={jobs:t.jobs,dry_run:t.dry_run,background:!0};t.user_id&&(d.user_id=t.user_id),t.max_memories&&(d.max_memories=Number(t.max_memories)),r(await B("/v1/maintenance",d))}catch(d){a(d)}}} aria-label="maintenance">
      <fieldset><legend>Jobs</legend>${dn.map(i=>_`<label class="check" for=${`job-${i}`}>
        <input id=${`job-${i}`} type="checkbox" checked=${t.jobs.includes(i)} onChange=${()=>c(i)} /> ${i}</label>`)}</fieldset>
      <${b} label="Only user" name="m-user" value=${t.user_id} onInput=${i=>e({...t,user_id:i})} />
      <${b} label="Prune to (memories per user)" name="m-max" type="number" min="1" value=${t.max_memories}
        onInput=${i=>e({...t,max_memories:i})} />
      <label class="check" for="m-dry"><input id="m-dry" type="checkbox" checked=${t.dry_run}
        onChange=${i=>e({...t,dry_run:i.currentTarget.checked})} /> Dry run</label>
      <div class="actions"><button type="submit" disabled=${o&&o.state==="running"}>Run</button></div>
    </form>
    <${x} error=${n} />
    ${o&&_`<div class="job" aria-live="polite">Job ${o.id}: <strong>${o.state}</strong> <${Ye} job=${o} />
      ${o.error&&_`<${x} error=${{code:o.error_code,message:o.error}} />`}
      ${o.report&&_`<pre>${JSON.stringify(o.report,null,2)}</pre>`}</div>`}
    <h3>Jobs of this server</h3>
    ${s.error?_`<${x} error=${s.error} />`:s.data&&(s.data.items.length?_`<table><thead><tr><th scope="col">Job</th><th scope="col">Kind</th><th scope="col">State</th><th scope="col">Progress</th></tr></thead>
        <tbody>${s.data.items.map(i=>_`<tr key=${i.id}><td>${i.id}</td><td>${i.kind}</td><td>${i.state}</td>
          <td><${Ye} job=${i} /></td></tr>`)}</tbody></table>`:_`<p class="muted">No jobs yet.</p>`)}
  </section>`}function pn(){const t=N(()=>I("/v1/admin/keys"),[]),[e,n]=g({tenant:"",label:"",admin:!1,operator:!1}),[a,o]=g(null),[r,s]=g(null),[c,u]=Pe(),i=async p=>{p.preventDefault(),s(null);try{const l={tenant:e.tenant,admin:e.admin,operator:e.operator};e.label&&(l.label=e.label),o(await B("/v1/admin/keys",l)),t.reload()}catch(l){s(l)}},d=p=>u(`Revoke key ${p.id}${p.label?` (${p.label})`:""} of tenant ${p.tenant}? Clients using it stop working.`,async()=>{await Ee(`/v1/admin/keys/${p.id}`),t.reload()},"Revoke");return _`<section aria-labelledby="keys-title"><h2 id="keys-title">API keys</h2>
    ${t.error?_`<${x} error=${t.error} />`:t.data&&_`<table><thead><tr><th scope="col">Id</th>
      <th scope="col">Tenant</th><th scope="col">Label</th><th scope="col">Rights</th><th scope="col">Created</th><th scope="col"></th></tr></thead>
      <tbody>${t.data.keys.map(p=>_`<tr key=${p.id}><td>${p.id}</td><td>${p.tenant}</td><td>${p.label||""}</td>
        <td>${[p.admin&&"admin",p.operator&&"operator"].filter(Boolean).join(", ")||"user"}</td><td>${P(p.created_at)}</td>
        <td><button type="button" class="danger" onClick=${()=>d(p)}>Revoke</button></td></tr>`)}</tbody></table>
      ${!t.data.keys.length&&_`<p class="muted">No keys: the server is open on loopback.</p>`}`}
    ${!t.error&&_`<form class="filters" onSubmit=${i} aria-label="new key">
      <${b} label="Tenant" name="k-tenant" value=${e.tenant} onInput=${p=>n({...e,tenant:p})} required />
      <${b} label="Label" name="k-label" value=${e.label} onInput=${p=>n({...e,label:p})} />
      <label class="check" for="k-admin"><input id="k-admin" type="checkbox" checked=${e.admin}
        onChange=${p=>n({...e,admin:p.currentTarget.checked})} /> Admin</label>
      <label class="check" for="k-op"><input id="k-op" type="checkbox" checked=${e.operator}
        onChange=${p=>n({...e,operator:p.currentTarget.checked})} /> Operator</label>
      <div class="actions"><button type="submit">Create key</button></div></form>`}
    <${x} error=${r} />
    ${a&&_`<${A}>New key for ${a.info.tenant} (shown once): <code>${a.key}</code></${A}>`}
    ${c}
  </section>`}function $n(){return _`<h1>Operations</h1><${un} /><${_n} /><${pn} />`}const Qe=[["memories","Memories",Jt],["recall","Recall playground",Qt],["declarative","Declarative",en],["graph","Graph",nn],["analytics","Analytics",cn],["operations","Operations",$n]],mn=["namespace","user_id"];function hn({onDone:t}){const[e,n]=g("");return _`<form class="keyprompt" onSubmit=${o=>{o.preventDefault(),$t(e.trim()),t()}} aria-labelledby="key-title">
    <h2 id="key-title">API key</h2>
    <p>This server needs an API key. It is kept for this browser session only.</p>
    <label class="field" for="api-key"><span>Key</span>
      <input id="api-key" type="password" autocomplete="off" value=${e}
        onInput=${o=>n(o.currentTarget.value)} required /></label>
    <button type="submit">Use key</button>
  </form>`}function fn(){const t=Ut(),[e,n]=g(!1),[a,o]=g(0);O(()=>At(()=>n(!0)),[]);const r=Qe.find(([d])=>d===t.page),s={};mn.forEach(d=>t.params.get(d)&&(s[d]=t.params.get(d)));const c=(d,p)=>{d.button!==0||d.metaKey||d.ctrlKey||d.shiftKey||(d.preventDefault(),E(p,s))},u=d=>`/ui/${d}${new URLSearchParams(s).size?`?${new URLSearchParams(s)}`:""}`,i=r&&r[2];return _`<header>
      <a class="brand" href="/ui/memories">muisti</a>
      <nav aria-label="pages">
        ${Qe.map(([d,p])=>_`<a href=${u(d)} onClick=${l=>c(l,d)}
              aria-current=${t.page===d?"page":void 0}>${p}</a>`)}
      </nav>
      ${pt()&&_`<button type="button" class="link" onClick=${()=>{$t(""),o(a+1)}}>Forget key</button>`}
    </header>
    <main id="main">
      ${e&&_`<${hn} onDone=${()=>{n(!1),o(a+1)}} />`}
      ${i?_`<${i} key=${`${t.page}-${a}`} params=${t.params} />`:_`<div class="error" role="alert">No page ${t.page}.
            <a href="/ui/memories">Memories</a></div>`}
    </main>`}const gt=document.getElementById("app");gt.textContent="";It(_`<${fn} />`,gt);
