var le,v,Ze,U,Pe,Xe,et,pe,ee,W,tt,we,he,fe,oe={},re=[],kt=/acit|ex(?:s|g|n|p|$)|rph|grid|ows|mnc|ntw|ine[ch]|zoo|^ord|itera/i,ce=Array.isArray;function M(t,e){for(var n in e)t[n]=e[n];return t}function Se(t){t&&t.parentNode&&t.parentNode.removeChild(t)}function nt(t,e,n){var a,o,r,s={};for(r in e)r=="key"?a=e[r]:r=="ref"?o=e[r]:s[r]=e[r];if(arguments.length>2&&(s.children=arguments.length>3?le.call(arguments,2):n),typeof t=="function"&&t.defaultProps!=null)for(r in t.defaultProps)s[r]===void 0&&(s[r]=t.defaultProps[r]);return te(t,s,a,o,null)}function te(t,e,n,a,o){var r={type:t,props:e,key:n,ref:a,__k:null,__:null,__b:0,__e:null,__c:null,constructor:void 0,__v:o??++Ze,__i:-1,__u:0};return o==null&&v.vnode!=null&&v.vnode(r),r}function de(t){return t.children}function ne(t,e){this.props=t,this.context=e}function q(t,e){if(e==null)return t.__?q(t.__,t.__i+1):null;for(var n;e<t.__k.length;e++)if((n=t.__k[e])!=null&&n.__e!=null)return n.__e;return typeof t.type=="function"?q(t):null}function wt(t){if(t.__P&&t.__d){var e=t.__v,n=e.__e,a=[],o=[],r=M({},e);r.__v=e.__v+1,v.vnode&&v.vnode(r),xe(t.__P,r,e,t.__n,t.__P.namespaceURI,32&e.__u?[n]:null,a,n??q(e),!!(32&e.__u),o),r.__v=e.__v,r.__.__k[r.__i]=r,it(a,r,o),e.__e=e.__=null,r.__e!=n&&at(r)}}function at(t){if((t=t.__)!=null&&t.__c!=null)return t.__e=t.__c.base=null,t.__k.some(function(e){if(e!=null&&e.__e!=null)return t.__e=t.__c.base=e.__e}),at(t)}function Ae(t){(!t.__d&&(t.__d=!0)&&U.push(t)&&!se.__r++||Pe!=v.debounceRendering)&&((Pe=v.debounceRendering)||Xe)(se)}function se(){try{for(var t,e=1;U.length;)U.length>e&&U.sort(et),t=U.shift(),e=U.length,wt(t)}finally{U.length=se.__r=0}}function ot(t,e,n,a,o,r,s,l,_,i,d){var p,c,$,b,k,m,h=a&&a.__k||re,f=e.length;for(_=St(n,e,h,_,f),p=0;p<f;p++)($=n.__k[p])!=null&&(c=$.__i!=-1&&h[$.__i]||oe,$.__i=p,m=xe(t,$,c,o,r,s,l,_,i,d),b=$.__e,$.ref&&c.ref!=$.ref&&(c.ref&&Ce(c.ref,null,$),d.push($.ref,$.__c||b,$)),k==null&&b!=null&&(k=b),4&$.__u?(_=rt($,_,t),c.__e&&(c.__e=null)):typeof $.type=="function"&&m!==void 0?_=m:b&&(_=b.nextSibling),$.__u&=-7);return n.__e=k,_}function St(t,e,n,a,o){var r,s,l,_,i,d=n.length,p=d,c=0;for(t.__k=new Array(o),r=0;r<o;r++)(s=e[r])!=null&&typeof s!="boolean"&&typeof s!="function"?(typeof s=="string"||typeof s=="number"||typeof s=="bigint"||s.constructor==String?s=t.__k[r]=te(null,s,null,null,null):ce(s)?s=t.__k[r]=te(de,{children:s},null,null,null):s.constructor===void 0&&s.__b>0?s=t.__k[r]=te(s.type,s.props,s.key,s.ref?s.ref:null,s.__v):t.__k[r]=s,_=r+c,s.__=t,s.__b=t.__b+1,l=null,(i=s.__i=xt(s,n,_,p))!=-1&&(p--,(l=n[i])&&(l.__u|=2)),l==null||l.__v==null?(i==-1&&(o>d?c--:o<d&&c++),typeof s.type!="function"&&(s.__u|=4)):i!=_&&(i==_-1?c--:i==_+1?c++:(i>_?c--:c++,s.__u|=4))):t.__k[r]=null;if(p)for(r=0;r<d;r++)(l=n[r])!=null&&(2&l.__u)==0&&(l.__e==a&&(a=q(l)),ct(l,l));return a}function rt(t,e,n){var a,o;if(typeof t.type=="function"){for(a=t.__k,o=0;a&&o<a.length;o++)a[o]&&(a[o].__=t,e=rt(a[o],e,n));return e}t.__e!=e&&(e&&t.type&&!e.parentNode&&(e=q(t)),e=n.insertBefore(t.__e,e||null));do e=e&&e.nextSibling;while(e!=null&&e.nodeType==8);return e}function xt(t,e,n,a){var o,r,s,l=t.key,_=t.type,i=e[n],d=i!=null&&(2&i.__u)==0;if(i===null&&l==null||d&&l==i.key&&_==i.type)return n;if(a>(d?1:0)){for(o=n-1,r=n+1;o>=0||r<e.length;)if((i=e[s=o>=0?o--:r++])!=null&&(2&i.__u)==0&&l==i.key&&_==i.type)return s}return-1}function De(t,e,n){e[0]=="-"?t.setProperty(e,n??""):t[e]=n==null?"":typeof n!="number"||kt.test(e)?n:n+"px"}function Z(t,e,n,a,o){var r,s;e:if(e=="style")if(typeof n=="string")t.style.cssText=n;else{if(typeof a=="string"&&(t.style.cssText=a=""),a)for(e in a)n&&e in n||De(t.style,e,"");if(n)for(e in n)a&&n[e]==a[e]||De(t.style,e,n[e])}else if(e[0]=="o"&&e[1]=="n")r=e!=(e=e.replace(tt,"$1")),s=e.toLowerCase(),e=s in t||e=="onFocusOut"||e=="onFocusIn"?s.slice(2):e.slice(2),t.l||(t.l={}),t.l[e+r]=n,n?a?n[W]=a[W]:(n[W]=we,t.addEventListener(e,r?fe:he,r)):t.removeEventListener(e,r?fe:he,r);else{if(o=="http://www.w3.org/2000/svg")e=e.replace(/xlink(H|:h)/,"h").replace(/sName$/,"s");else if(e!="width"&&e!="height"&&e!="href"&&e!="list"&&e!="form"&&e!="tabIndex"&&e!="download"&&e!="rowSpan"&&e!="colSpan"&&e!="role"&&e!="popover"&&e in t)try{t[e]=n??"";break e}catch{}typeof n=="function"||(n==null||n===!1&&e[4]!="-"?t.removeAttribute(e):t.setAttribute(e,e=="popover"&&n==1?"":n))}}function Me(t){return function(e){if(this.l){var n=this.l[e.type+t];if(e[ee]==null)e[ee]=we++;else if(e[ee]<n[W])return;return n(v.event?v.event(e):e)}}}function xe(t,e,n,a,o,r,s,l,_,i){var d,p,c,$,b,k,m,h,f,C,z,j,K,Te,Q,_e,P=e.type;if(e.constructor!==void 0)return null;128&n.__u&&(_=!!(32&n.__u),r=[l=e.__e=n.__e]),(d=v.__b)&&d(e);e:if(typeof P=="function"){p=s.length;try{if(f=e.props,C=P.prototype&&P.prototype.render,z=(d=P.contextType)&&a[d.__c],j=d?z?z.props.value:d.__:a,n.__c?h=(c=e.__c=n.__c).__=c.__E:(C?e.__c=c=new P(f,j):(e.__c=c=new ne(f,j),c.constructor=P,c.render=It),z&&z.sub(c),c.state||(c.state={}),c.__n=a,$=c.__d=!0,c.__h=[],c._sb=[]),C&&c.__s==null&&(c.__s=c.state),C&&P.getDerivedStateFromProps!=null&&(c.__s==c.state&&(c.__s=M({},c.__s)),M(c.__s,P.getDerivedStateFromProps(f,c.__s))),b=c.props,k=c.state,c.__v=e,$)C&&P.getDerivedStateFromProps==null&&c.componentWillMount!=null&&c.componentWillMount(),C&&c.componentDidMount!=null&&c.__h.push(c.componentDidMount);else{if(C&&P.getDerivedStateFromProps==null&&f!==b&&c.componentWillReceiveProps!=null&&c.componentWillReceiveProps(f,j),e.__v==n.__v||!c.__e&&c.shouldComponentUpdate!=null&&c.shouldComponentUpdate(f,c.__s,j)===!1){e.__v!=n.__v&&(c.props=f,c.state=c.__s,c.__d=!1),e.__e=n.__e,e.__k=n.__k,e.__k.some(function(F){F&&(F.__=e)}),re.push.apply(c.__h,c._sb),c._sb=[],c.__h.length&&s.push(c),l=q(n);break e}c.componentWillUpdate!=null&&c.componentWillUpdate(f,c.__s,j),C&&c.componentDidUpdate!=null&&c.__h.push(function(){c.componentDidUpdate(b,k,m)})}if(c.context=j,c.props=f,c.__P=t,c.__e=!1,K=v.__r,Te=0,C)c.state=c.__s,c.__d=!1,K&&K(e),d=c.render(c.props,c.state,c.context),re.push.apply(c.__h,c._sb),c._sb=[];else do c.__d=!1,K&&K(e),d=c.render(c.props,c.state,c.context),c.state=c.__s;while(c.__d&&++Te<25);c.state=c.__s,c.getChildContext!=null&&(a=M(M({},a),c.getChildContext())),C&&!$&&c.getSnapshotBeforeUpdate!=null&&(m=c.getSnapshotBeforeUpdate(b,k)),Q=d!=null&&d.type===de&&d.key==null?lt(d.props.children):d,l=ot(t,ce(Q)?Q:[Q],e,n,a,o,r,s,l,_,i),c.base=e.__e,e.__u&=-161,c.__h.length&&s.push(c),h&&(c.__E=c.__=null)}catch(F){if(s.length=p,e.__v=null,_||r!=null){if(F.then){for(e.__u|=_?160:128;l&&l.nodeType==8&&l.nextSibling;)l=l.nextSibling;r!=null&&(r[r.indexOf(l)]=null),e.__e=l}else if(r!=null)for(_e=r.length;_e--;)Se(r[_e])}else e.__e=n.__e;e.__k==null&&(e.__k=n.__k||[]),F.then||st(e),v.__e(F,e,n)}}else r==null&&e.__v==n.__v?(e.__k=n.__k,e.__e=n.__e):l=e.__e=Ct(n.__e,e,n,a,o,r,s,_,i);return(d=v.diffed)&&d(e),128&e.__u?void 0:l}function st(t){t&&(t.__c&&(t.__c.__e=!0),t.__k&&t.__k.some(st))}function it(t,e,n){for(var a=0;a<n.length;a++)Ce(n[a],n[++a],n[++a]);v.__c&&v.__c(e,t),t.some(function(o){try{t=o.__h,o.__h=[],t.some(function(r){r.call(o)})}catch(r){v.__e(r,o.__v)}})}function lt(t){return typeof t!="object"||t==null||t.__b>0?t:ce(t)?t.map(lt):t.constructor!==void 0?null:M({},t)}function Ct(t,e,n,a,o,r,s,l,_){var i,d,p,c,$,b,k,m=n.props||oe,h=e.props,f=e.type;if(f=="svg"?o="http://www.w3.org/2000/svg":f=="math"?o="http://www.w3.org/1998/Math/MathML":o||(o="http://www.w3.org/1999/xhtml"),r!=null){for(i=0;i<r.length;i++)if(($=r[i])&&"setAttribute"in $==!!f&&(f?$.localName==f:$.nodeType==3)){t=$,r[i]=null;break}}if(t==null){if(f==null)return document.createTextNode(h);t=document.createElementNS(o,f,h.is&&h),l&&(v.__m&&v.__m(e,r),l=!1),r=null}if(f==null)m===h||l&&t.data==h||(t.data=h);else{if(r=f=="textarea"&&h.defaultValue!=null?null:r&&le.call(t.childNodes),!l&&r!=null)for(m={},i=0;i<t.attributes.length;i++)m[($=t.attributes[i]).name]=$.value;for(i in m)$=m[i],i=="dangerouslySetInnerHTML"?p=$:i=="children"||i in h||i=="value"&&"defaultValue"in h||i=="checked"&&"defaultChecked"in h||Z(t,i,null,$,o);for(i in h)$=h[i],i=="children"?c=$:i=="dangerouslySetInnerHTML"?d=$:i=="value"?b=$:i=="checked"?k=$:l&&typeof $!="function"||m[i]===$||Z(t,i,$,m[i],o);if(d)l||p&&(d.__html==p.__html||d.__html==t.innerHTML)||(t.innerHTML=d.__html),e.__k=[];else if(p&&(t.innerHTML=""),ot(e.type=="template"?t.content:t,ce(c)?c:[c],e,n,a,f=="foreignObject"?"http://www.w3.org/1999/xhtml":o,r,s,r?r[0]:n.__k&&q(n,0),l,_),r!=null)for(i=r.length;i--;)Se(r[i]);l&&f!="textarea"||(i="value",f=="progress"&&b==null?t.removeAttribute("value"):b!=null&&(b!==t[i]||f=="progress"&&!b||f=="option"&&b!=m[i])&&Z(t,i,b,m[i],o),i="checked",k!=null&&k!=t[i]&&Z(t,i,k,m[i],o))}return t}function Ce(t,e,n){try{if(typeof t=="function"){var a=typeof t.__u=="function";a&&t.__u(),a&&e==null||(t.__u=t(e))}else t.current=e}catch(o){v.__e(o,n)}}function ct(t,e,n){var a,o;if(v.unmount&&v.unmount(t),(a=t.ref)&&(a.current&&a.current!=t.__e||Ce(a,null,e)),(a=t.__c)!=null){if(a.componentWillUnmount)try{a.componentWillUnmount()}catch(r){v.__e(r,e)}a.base=a.__P=a.__n=null}if(a=t.__k)for(o=0;o<a.length;o++)a[o]&&ct(a[o],e,n||typeof t.type!="function");n||Se(t.__e),t.__c=t.__=t.__e=void 0}function It(t,e,n){return this.constructor(t,n)}function Et(t,e,n){var a,o,r,s;e==document&&(e=document.documentElement),v.__&&v.__(t,e),o=(a=!1)?null:e.__k,r=[],s=[],xe(e,t=e.__k=nt(de,null,[t]),o||oe,oe,e.namespaceURI,o?null:e.firstChild?le.call(e.childNodes):null,r,o?o.__e:e.firstChild,a,s),it(r,t,s),t.props.children=null}le=re.slice,v={__e:function(t,e,n,a){for(var o,r,s;e=e.__;)if((o=e.__c)&&!o.__)try{if((r=o.constructor)&&r.getDerivedStateFromError!=null&&(o.setState(r.getDerivedStateFromError(t)),s=o.__d),o.componentDidCatch!=null&&(o.componentDidCatch(t,a||{}),s=o.__d),s)return o.__E=o}catch(l){t=l}throw t}},Ze=0,ne.prototype.setState=function(t,e){var n;n=this.__s!=null&&this.__s!=this.state?this.__s:this.__s=M({},this.state),typeof t=="function"&&(t=t(M({},n),this.props)),t&&M(n,t),t!=null&&this.__v&&(e&&this._sb.push(e),Ae(this))},ne.prototype.forceUpdate=function(t){this.__v&&(this.__e=!0,t&&this.__h.push(t),Ae(this))},ne.prototype.render=de,U=[],Xe=typeof Promise=="function"?Promise.prototype.then.bind(Promise.resolve()):setTimeout,et=function(t,e){return t.__v.__b-e.__v.__b},se.__r=0,pe=Math.random().toString(8),ee="__d"+pe,W="__a"+pe,tt=/(PointerCapture)$|Capture$/i,we=0,he=Me(!1),fe=Me(!0);var V,w,$e,Ue,G=0,dt=[],S=v,Re=S.__b,je=S.__r,Le=S.diffed,Oe=S.__c,qe=S.unmount,He=S.__;function Ie(t,e){S.__h&&S.__h(w,t,G||e),G=0;var n=w.__H||(w.__H={__:[],__h:[]});return t>=n.__.length&&n.__.push({}),n.__[t]}function g(t){return G=1,Nt(_t,t)}function Nt(t,e,n){var a=Ie(V++,2);if(a.t=t,!a.__c&&(a.__=[_t(void 0,e),function(l){var _=a.__N?a.__N[0]:a.__[0],i=a.t(_,l);_!==i&&(a.__N=[i,a.__[1]],a.__c.setState({}))}],a.__c=w,!w.__f)){var o=function(l,_,i){if(!a.__c.__H)return!0;var d=!1,p=a.__c.props!==l;if(a.__c.__H.__.some(function($){if($.__N){d=!0;var b=$.__[0];$.__=$.__N,$.__N=void 0,b!==$.__[0]&&(p=!0)}}),r){var c=r.call(this,l,_,i);return d?c||p:c}return!d||p};w.__f=!0;var r=w.shouldComponentUpdate,s=w.componentWillUpdate;w.componentWillUpdate=function(l,_,i){if(this.__e){var d=r;r=void 0,o(l,_,i),r=d}s&&s.call(this,l,_,i)},w.shouldComponentUpdate=o}return a.__N||a.__}function N(t,e){var n=Ie(V++,3);!S.__s&&ut(n.__H,e)&&(n.__=t,n.u=e,w.__H.__h.push(n))}function Y(t){return G=5,H(function(){return{current:t}},[])}function H(t,e){var n=Ie(V++,7);return ut(n.__H,e)&&(n.__=t(),n.__H=e,n.__h=t),n.__}function Tt(t,e){return G=8,H(function(){return t},e)}function Pt(){for(var t;t=dt.shift();){var e=t.__H;if(t.__P&&e)try{e.__h.some(ae),e.__h.some(ye),e.__h=[]}catch(n){e.__h=[],S.__e(n,t.__v)}}}S.__b=function(t){w=null,Re&&Re(t)},S.__=function(t,e){t&&e.__k&&e.__k.__m&&(t.__m=e.__k.__m),He&&He(t,e)},S.__r=function(t){je&&je(t),V=0;var e=(w=t.__c).__H;e&&($e===w?(e.__h=[],w.__h=[],e.__.some(function(n){n.__N&&(n.__=n.__N),n.u=n.__N=void 0})):(e.__h.some(ae),e.__h.some(ye),e.__h=[],V=0)),$e=w},S.diffed=function(t){Le&&Le(t);var e=t.__c;e&&e.__H&&(e.__H.__h.length&&(dt.push(e)!==1&&Ue===S.requestAnimationFrame||((Ue=S.requestAnimationFrame)||At)(Pt)),e.__H.__.some(function(n){n.u&&(n.__H=n.u,n.u=void 0)})),$e=w=null},S.__c=function(t,e){e.some(function(n){try{n.__h.some(ae),n.__h=n.__h.filter(function(a){return!a.__||ye(a)})}catch(a){e.some(function(o){o.__h&&(o.__h=[])}),e=[],S.__e(a,n.__v)}}),Oe&&Oe(t,e)},S.unmount=function(t){qe&&qe(t);var e,n=t.__c;n&&n.__H&&(n.__H.__.some(function(a){try{ae(a)}catch(o){e=o}}),n.__H=void 0,e&&S.__e(e,n.__v))};var Fe=typeof requestAnimationFrame=="function";function At(t){var e,n=function(){clearTimeout(a),Fe&&cancelAnimationFrame(e),setTimeout(t)},a=setTimeout(n,35);Fe&&(e=requestAnimationFrame(n))}function ae(t){var e=w,n=t.__c;typeof n=="function"&&(t.__c=void 0,n()),w=e}function ye(t){var e=w;t.__c=t.__(),w=e}function ut(t,e){return!t||t.length!==e.length||e.some(function(n,a){return n!==t[a]})}function _t(t,e){return typeof e=="function"?e(t):e}const be="muisti.key";class Be extends Error{constructor(e,n,a){super(a),this.status=e,this.code=n}}function pt(){return sessionStorage.getItem(be)||""}function $t(t){t?sessionStorage.setItem(be,t):sessionStorage.removeItem(be)}const ge=new Set;function Dt(t){return ge.add(t),()=>ge.delete(t)}function Mt(t){const e=new URLSearchParams;for(const[a,o]of Object.entries(t||{}))o==null||o===""||(Array.isArray(o)?o.filter(r=>r!=="").forEach(r=>e.append(a,r)):e.append(a,String(o)));const n=e.toString();return n?`?${n}`:""}async function ue(t,e,{params:n,body:a,headers:o}={}){const r={Accept:"application/json",...o||{}},s=pt();s&&(r.Authorization=`Bearer ${s}`),a!==void 0&&(r["Content-Type"]="application/json");let l;try{l=await fetch(e+Mt(n),{method:t,headers:r,body:a===void 0?void 0:JSON.stringify(a)})}catch(d){throw new Be(0,"unreachable",`the server could not be reached (${d.message})`)}if(l.status===204)return null;const _=await l.text();let i=null;try{i=_?JSON.parse(_):null}catch{i=null}if(!l.ok){const d=i&&i.error,p=new Be(l.status,d&&d.code||"error",d&&d.message||`${l.status} ${l.statusText}`);throw l.status===401&&ge.forEach(c=>c(p)),p}return i}const I=(t,e)=>ue("GET",t,{params:e}),B=(t,e,n)=>ue("POST",t,{body:e??{},params:n}),Ut=(t,e,n)=>ue("PATCH",t,{body:e,headers:n}),Ee=(t,e)=>ue("DELETE",t,{params:e}),ve="/ui";function ze(){return{page:(location.pathname.startsWith(ve)?location.pathname.slice(ve.length):"").replace(/^\/+|\/+$/g,"")||"memories",params:new URLSearchParams(location.search)}}const ke=new Set;function T(t,e={},{replace:n=!1}={}){const a=new URLSearchParams;for(const[s,l]of Object.entries(e))l==null||l===""||l===!1||(Array.isArray(l)?l.forEach(_=>_!==""&&a.append(s,_)):a.append(s,String(l)));const o=a.toString(),r=`${ve}/${t}${o?`?${o}`:""}`;r!==location.pathname+location.search&&(n?history.replaceState(null,"",r):history.pushState(null,"",r),ke.forEach(s=>s()))}function Rt(){const[t,e]=g(ze);return N(()=>{const n=()=>e(ze());return ke.add(n),addEventListener("popstate",n),()=>{ke.delete(n),removeEventListener("popstate",n)}},[]),t}function L(t,e=[]){const n={};for(const a of new Set(t.keys()))n[a]=e.includes(a)?t.getAll(a):t.get(a);return n}const jt=(function(){const e=typeof document<"u"&&document.createElement("link").relList;return e&&e.supports&&e.supports("modulepreload")?"modulepreload":"preload"})(),Lt=function(t){return"/ui/"+t},Ke={},Ot=function(e,n,a){let o=Promise.resolve();if(n&&n.length>0){let i=function(d){return Promise.all(d.map(p=>Promise.resolve(p).then(c=>({status:"fulfilled",value:c}),c=>({status:"rejected",reason:c}))))};var s=i;document.getElementsByTagName("link");const l=document.querySelector("meta[property=csp-nonce]"),_=l?.nonce||l?.getAttribute("nonce");o=i(n.map(d=>{if(d=Lt(d),d in Ke)return;Ke[d]=!0;const p=d.endsWith(".css"),c=p?'[rel="stylesheet"]':"";if(document.querySelector(`link[href="${d}"]${c}`))return;const $=document.createElement("link");if($.rel=p?"stylesheet":jt,p||($.as="script"),$.crossOrigin="",$.href=d,_&&$.setAttribute("nonce",_),document.head.appendChild($),p)return new Promise((b,k)=>{$.addEventListener("load",b),$.addEventListener("error",()=>k(new Error(`Unable to preload CSS for ${d}`)))})}))}function r(l){const _=new Event("vite:preloadError",{cancelable:!0});if(_.payload=l,window.dispatchEvent(_),!_.defaultPrevented)throw l}return o.then(l=>{for(const _ of l||[])_.status==="rejected"&&r(_.reason);return e().catch(r)})};var mt=function(t,e,n,a){var o;e[0]=0;for(var r=1;r<e.length;r++){var s=e[r++],l=e[r]?(e[0]|=s?1:2,n[e[r++]]):e[++r];s===3?a[0]=l:s===4?a[1]=Object.assign(a[1]||{},l):s===5?(a[1]=a[1]||{})[e[++r]]=l:s===6?a[1][e[++r]]+=l+"":s?(o=t.apply(l,mt(t,l,n,["",null])),a.push(o),l[0]?e[0]|=2:(e[r-2]=0,e[r]=o)):a.push(l)}return a},We=new Map;function qt(t){var e=We.get(this);return e||(e=new Map,We.set(this,e)),(e=mt(this,e.get(t)||(e.set(t,e=(function(n){for(var a,o,r=1,s="",l="",_=[0],i=function(c){r===1&&(c||(s=s.replace(/^\s*\n\s*|\s*\n\s*$/g,"")))?_.push(0,c,s):r===3&&(c||s)?(_.push(3,c,s),r=2):r===2&&s==="..."&&c?_.push(4,c,0):r===2&&s&&!c?_.push(5,0,!0,s):r>=5&&((s||!c&&r===5)&&(_.push(r,0,s,o),r=6),c&&(_.push(r,c,0,o),r=6)),s=""},d=0;d<n.length;d++){d&&(r===1&&i(),i(d));for(var p=0;p<n[d].length;p++)a=n[d][p],r===1?a==="<"?(i(),_=[_],r=3):s+=a:r===4?s==="--"&&a===">"?(r=1,s=""):s=a+s[0]:l?a===l?l="":s+=a:a==='"'||a==="'"?l=a:a===">"?(i(),r=1):r&&(a==="="?(r=5,o=s,s=""):a==="/"&&(r<5||n[d][p+1]===">")?(i(),r===3&&(_=_[0]),r=_,(_=_[0]).push(2,0,r),r=0):a===" "||a==="	"||a===`
`||a==="\r"?(i(),r=2):s+=a),r===3&&s==="!--"&&(r=4,_=_[0])}return i(),_})(t)),e),arguments,[])).length>1?e:e[0]}const u=qt.bind(nt),ht=["scratch","short_term","long_term","episodic","declarative"],Ht=["active","archived","superseded"],Ft=["fact","preference","rule"];function E(t,e){const[n,a]=g({data:null,error:null,loading:!0}),o=Y(0),r=Tt(()=>{const s=++o.current;a(l=>({...l,loading:!0,error:null})),Promise.resolve().then(t).then(l=>s===o.current&&a({data:l,error:null,loading:!1}),l=>s===o.current&&a({data:null,error:l,loading:!1}))},e);return N(r,[r]),{...n,reload:r}}function x({error:t}){if(!t)return null;const e=t.code?u`<code>${t.code}</code> `:"";return u`<div class="error" role="alert">${e}${t.message||String(t)}</div>`}function D({children:t}){return u`<p class="notice" role="status">${t}</p>`}let Bt=0;function ft(t){const e=Y(null);return e.current||(e.current=`${t}-${++Bt}`),e.current}function y({label:t,value:e,onInput:n,type:a="text",placeholder:o,name:r,list:s,...l}){const _=ft(r||"f");return u`<label class="field" for=${_}>
    <span>${t}</span>
    <input id=${_} name=${r} type=${a} value=${e??""} placeholder=${o}
      list=${s} onInput=${i=>n(i.currentTarget.value)} ...${l} />
  </label>`}function R({label:t,value:e,onChange:n,options:a,name:o,any:r="any"}){const s=ft(o||"s");return u`<label class="field" for=${s}>
    <span>${t}</span>
    <select id=${s} name=${o} value=${e??""} onChange=${l=>n(l.currentTarget.value)}>
      ${r!==null&&u`<option value="">${r}</option>`}
      ${a.map(l=>u`<option value=${l}>${l}</option>`)}
    </select>
  </label>`}function Ne(){const[t,e]=g(null),[n,a]=g(null),[o,r]=g(!1),s=(p,c,$="Delete")=>{a(null),e({message:p,action:c,label:$})},l=()=>e(null),_=Y(null);N(()=>{if(!t)return;_.current&&_.current.focus();const p=c=>c.key==="Escape"&&e(null);return document.addEventListener("keydown",p),()=>document.removeEventListener("keydown",p)},[t]);const i=async()=>{r(!0);try{await t.action(),e(null)}catch(p){a(p)}finally{r(!1)}};return[t?u`<div class="backdrop">
        <div class="modal" role="dialog" aria-modal="true" aria-labelledby="confirm-title">
          <h2 id="confirm-title">Are you sure?</h2>
          <p>${t.message}</p>
          <${x} error=${n} />
          <div class="actions">
            <button type="button" onClick=${l} disabled=${o}>Cancel</button>
            <button type="button" class="danger" onClick=${i} disabled=${o} ref=${_}>
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
  </nav>`}function O(t){return typeof t.content=="string"?t.content:JSON.stringify(t.content)}function A(t){if(!t)return"";const e=new Date(t);return Number.isNaN(e.getTime())?t:e.toISOString().replace("T"," ").slice(0,16)}function ie({children:t,kind:e}){return u`<span class=${`badge ${e||""}`}>${t}</span>`}function J({option:t,label:e,height:n=320,testid:a}){const o=Y(null),r=Y(null),[s,l]=g(null);return N(()=>{let _=!0;return Ot(async()=>{const{draw:i}=await import("./charts-CVBNsewV.js");return{draw:i}},[]).then(({draw:i})=>{!_||!o.current||(r.current=i(o.current,t),o.current.dataset.drawn="true")},i=>l(i)),()=>{_=!1,r.current&&r.current.dispose(),r.current=null}},[]),N(()=>{r.current&&r.current.update(t)},[t]),s?u`<${x} error=${s} />`:u`<div class="chart" ref=${o} role="img" aria-label=${e} data-testid=${a}
    style=${`height:${n}px`}></div>`}function bt({id:t,user:e}){const n=E(()=>I(`/v1/memories/${t}/history`,{user_id:e}),[t,e]);return n.error?u`<${x} error=${n.error} />`:n.data?n.data.history.length?u`<ol class="history">${n.data.history.map(a=>u`<li>
    <${ie}>${a.event}</${ie}> ${A(a.at)} by ${a.actor}
    ${a.confidence!==void 0&&a.confidence!==null?` · confidence ${a.confidence}`:""}
    ${a.old?u`<div><del>${a.old}</del></div>`:""}${a.new?u`<div><ins>${a.new}</ins></div>`:""}
  </li>`)}</ol>`:u`<p class="muted">No recorded changes.</p>`:u`<p class="loading">Loading…</p>`}const Je=50,zt=["namespace","user_id","agent_id","session_id","scope","category","tag","state","from","to","q","mode","order"],Kt=["newest","importance","accessed"];function X(t,e){if(!t)return;const n=new Date(`${t}T00:00:00Z`);if(!Number.isNaN(n.getTime()))return e&&n.setUTCDate(n.getUTCDate()+1),n.toISOString()}function Wt(t,e){if(t.q){const n={};return t.agent_id&&(n.agent_id=t.agent_id),t.category&&(n.category=t.category),t.scope&&(n.scope=t.scope),t.tag&&t.tag.length&&(n.tags=t.tag),t.from&&(n.created_after=X(t.from)),t.to&&(n.created_before=X(t.to,!0)),B("/v1/recall",{query:t.q,namespace:t.namespace||void 0,user_id:t.user_id||void 0,session_id:t.session_id||void 0,mode:t.mode==="semantic"?"vector":"lexical",limit:Je,filters:n,include_archived:t.state==="archived"}).then(a=>({items:a.hits.map(o=>({...o.memory,_score:o.score}))}))}return I("/v1/memories",{namespace:t.namespace,user_id:t.user_id,agent_id:t.agent_id,session_id:t.session_id,scope:t.scope,category:t.category,tag:t.tag,state:t.state,created_after:X(t.from),created_before:X(t.to,!0),order:t.order,cursor:e,limit:Je})}function Jt({f:t,onApply:e}){const[n,a]=g(t);N(()=>a(t),[JSON.stringify(t)]);const o=s=>l=>a({...n,[s]:l});return u`<form class="filters" onSubmit=${s=>{s.preventDefault(),e(n)}} aria-label="filters">
    <${y} label="Search" name="q" type="search" value=${n.q} onInput=${o("q")}
      placeholder="words or a question" />
    <${R} label="Search by" name="mode" value=${n.mode} onChange=${o("mode")}
      options=${["semantic"]} any="full text" />
    <${y} label="Namespace" name="namespace" value=${n.namespace} onInput=${o("namespace")} placeholder="default" />
    <${y} label="User" name="user_id" value=${n.user_id} onInput=${o("user_id")} />
    <${y} label="Agent" name="agent_id" value=${n.agent_id} onInput=${o("agent_id")} />
    <${y} label="Session" name="session_id" value=${n.session_id} onInput=${o("session_id")} />
    <${R} label="Scope" name="scope" value=${n.scope} onChange=${o("scope")} options=${ht} />
    <${y} label="Category" name="category" value=${n.category} onInput=${o("category")} />
    <${y} label="Tag" name="tag" value=${(n.tag||[]).join(",")}
      onInput=${s=>o("tag")(s.split(",").map(l=>l.trim()).filter(Boolean))} placeholder="a,b" />
    <${R} label="State" name="state" value=${n.state} onChange=${o("state")} options=${Ht} />
    <${R} label="Order" name="order" value=${n.order} onChange=${o("order")} options=${Kt}
      any="oldest first" />
    <${y} label="Created from" name="from" type="date" value=${n.from} onInput=${o("from")} />
    <${y} label="Created to" name="to" type="date" value=${n.to} onInput=${o("to")} />
    <div class="actions"><button type="submit">Apply</button>
      <button type="button" onClick=${()=>{a({}),e({})}}>Clear</button></div>
  </form>`}function Vt({id:t,f:e,onChanged:n,onClose:a,ask:o}){const r=e.user_id||void 0,s=E(()=>I(`/v1/memories/${t}`,{user_id:r}),[t,r]),[l,_]=g(null),[i,d]=g(null),[p,c]=g(!1);if(s.error)return u`<section class="detail" aria-label="memory"><${x} error=${s.error} />
    <button type="button" onClick=${a}>Close</button></section>`;if(!s.data)return u`<section class="detail" aria-label="memory"><p class="loading">Loading…</p></section>`;const $=s.data,b=async m=>{m.preventDefault(),d(null);try{const h={content:l.content,importance:Number(l.importance),tags:l.tags.split(",").map(f=>f.trim()).filter(Boolean),expected_version:$.version,actor:"dashboard"};l.category&&l.category!==$.category&&(h.category=l.category),$.scope==="declarative"&&$.user_id&&(h.user_id=$.user_id),await Ut(`/v1/memories/${t}`,h),_(null),c(!0),s.reload(),n()}catch(h){d(h)}},k=()=>o(`Delete this memory? "${O($).slice(0,120)}"`,async()=>{await Ee(`/v1/memories/${t}`,{user_id:$.scope==="declarative"?$.user_id:r}),n(),a()});return u`<section class="detail" aria-labelledby="detail-title">
    <div class="row"><h2 id="detail-title">Memory</h2>
      <button type="button" onClick=${a}>Close</button></div>
    ${p&&u`<${D}>Saved.</${D}>`}
    ${l?u`<form onSubmit=${b} class="edit" aria-label="edit memory">
          <label class="field wide" for="edit-content"><span>Content</span>
            <textarea id="edit-content" rows="4" value=${l.content}
              onInput=${m=>_({...l,content:m.currentTarget.value})}></textarea></label>
          <${y} label="Category" name="edit-category" value=${l.category}
            onInput=${m=>_({...l,category:m})} />
          <${y} label="Tags" name="edit-tags" value=${l.tags} onInput=${m=>_({...l,tags:m})} />
          <${y} label="Importance" name="edit-importance" type="number" min="0" max="1" step="0.05"
            value=${l.importance} onInput=${m=>_({...l,importance:m})} />
          <${x} error=${i} />
          <div class="actions"><button type="submit">Save</button>
            <button type="button" onClick=${()=>_(null)}>Cancel</button></div>
        </form>`:u`<p class="content">${O($)}</p>
        <div class="actions">
          <button type="button" onClick=${()=>{c(!1),_({content:O($),category:$.category,tags:($.tags||[]).join(", "),importance:$.importance})}}>Edit</button>
          <button type="button" class="danger" onClick=${k}>Delete</button>
        </div>`}
    <dl class="fields">
      ${[["id",$.id],["namespace",$.namespace],["scope",$.scope],["category",$.category],["state",$.state],["user",$.user_id],["agent",$.agent_id],["session",$.session_id],["tags",($.tags||[]).join(", ")],["importance",$.importance],["confidence",$.confidence],["source",$.source],["created",A($.created_at)],["updated",A($.updated_at)],["accessed",$.access_count],["version",$.version]].filter(([,m])=>m!=null&&m!=="").map(([m,h])=>u`<dt>${m}</dt><dd>${String(h)}</dd>`)}
    </dl>
    <h3>History</h3>
    <${bt} key=${$.version} id=${t} user=${r} />
  </section>`}function Gt({params:t}){const e=L(t,["tag","c"]),n=e.c||[],a=Object.fromEntries(zt.map(m=>[m,e[m]])),[o,r]=g(new Set),[s,l]=g(null),[_,i]=Ne(),d=E(()=>Wt(a,n[n.length-1]),[t.toString()]),p=(m,h={})=>T("memories",{...m,...h}),c=d.data&&d.data.items||[],$=m=>{const h=new Set(o);h.has(m)?h.delete(m):h.add(m),r(h)},b=()=>i(`Delete ${o.size} selected memories? This cannot be undone.`,async()=>{const m=new Map(c.map(f=>[f.id,f]));let h=0;for(const f of o){const C=m.get(f);await Ee(`/v1/memories/${f}`,{user_id:C&&C.scope==="declarative"?C.user_id:void 0}),h+=1}r(new Set),l(`Deleted ${h} memories.`),d.reload()},`Delete ${o.size}`),k=!!a.q;return u`<h1>Memories</h1>
    <${Jt} f=${a} onApply=${m=>{r(new Set),p(m)}} />
    ${s&&u`<${D}>${s}</${D}>`}
    <${x} error=${d.error} />
    <div class="split">
      <section class="list" aria-label="memories">
        <div class="row">
          <span class="muted" aria-live="polite">${d.loading?"Loading…":`${c.length} ${k?"results by score, highest first (not all of them close)":"on this page"}`}</span>
          <button type="button" class="danger" disabled=${!o.size} onClick=${b}>
            Delete selected (${o.size})</button>
        </div>
        <table>
          <thead><tr><th scope="col"><span class="sr-only">Select</span></th><th scope="col">Memory</th>
            ${k&&u`<th scope="col">Score</th>`}
            <th scope="col">Scope</th><th scope="col">User</th><th scope="col">State</th><th scope="col">Created</th></tr></thead>
          <tbody>
            ${c.map(m=>u`<tr key=${m.id} class=${e.id===m.id?"current":""}>
              <td><input type="checkbox" aria-label=${`select ${m.id}`} checked=${o.has(m.id)}
                onChange=${()=>$(m.id)} /></td>
              <td><a href=${`/ui/memories?${Yt(t,"id",m.id)}`}
                onClick=${h=>{h.preventDefault(),p(L(t,["tag","c"]),{id:m.id})}}
                class="memtext">${O(m).slice(0,200)}</a></td>
              ${k&&u`<td>${m._score===void 0?"":m._score.toFixed(3)}</td>`}
              <td>${m.scope}</td><td>${m.user_id||""}</td><td>${m.state}</td><td>${A(m.created_at)}</td>
            </tr>`)}
          </tbody>
        </table>
        ${!d.loading&&!c.length&&!d.error&&u`<p class="muted">No memories match.</p>`}
        ${!k&&u`<${yt} cursors=${n} next=${d.data&&d.data.next_cursor}
          onPage=${m=>p({...a,c:m})} />`}
      </section>
      ${e.id&&u`<${Vt} key=${e.id} id=${e.id} f=${a} ask=${i}
        onChanged=${()=>d.reload()}
        onClose=${()=>p(L(t,["tag","c"]),{id:void 0})} />`}
    </div>
    ${_}`}function Yt(t,e,n){const a=new URLSearchParams(t);return a.set(e,n),a}const Qt=[["relevance","relevance"],["lexical","lexical_score"],["vector","similarity"],["graph","graph"],["reranker","rerank"],["recency","recency"],["access","access"],["importance","importance"]];function Zt({label:t,value:e,raw:n}){if(e==null)return u`<span class="sig none">${t} —</span>`;const a=Math.max(0,Math.min(1,e))*100;return u`<span class="sig" title=${`${t}: ${n??e}`}>
    <span class="siglabel">${t}</span>
    <span class="bar" role="img" aria-label=${`${t} ${Number(n??e).toFixed(3)}`}>
      <span style=${`width:${a.toFixed(1)}%`}></span></span>
    <span class="num">${Number(n??e).toFixed(3)}</span></span>`}function Xt(t){if(t)return t.length===16?`${t}:00Z`:t}function en(t){const e=a=>a?a.slice(0,10):"",n=e(t.valid_from||t.created_at);return t.valid_until?`true ${n} – ${e(t.valid_until)}`:`true since ${n}`}function tn({params:t}){const e=L(t),[n,a]=g({limit:"10",...e});N(()=>a({limit:"10",...e}),[t.toString()]);const o=i=>d=>a({...n,[i]:d}),r=E(()=>{if(!e.query)return Promise.resolve(null);const i={};return e.scope&&(i.scope=e.scope),e.category&&(i.category=e.category),e.agent_id&&(i.agent_id=e.agent_id),B("/v1/recall",{query:e.query,namespace:e.namespace||void 0,user_id:e.user_id||void 0,session_id:e.session_id||void 0,limit:e.limit?Number(e.limit):void 0,mode:e.mode||void 0,min_score:e.min_score?Number(e.min_score):void 0,include_archived:e.include_archived==="true",include_superseded:e.include_superseded==="true",as_of:Xt(e.as_of),cluster:e.cluster?Number(e.cluster):void 0,filters:i,explain:!0})},[t.toString()]),s=i=>{i.preventDefault(),T("recall",n)},l=r.data&&r.data.hits||[],_=Math.max(1e-9,...l.map(i=>i.signals&&i.signals.lexical_score||0));return u`<h1>Recall playground</h1>
    <form class="filters" onSubmit=${s} aria-label="recall request">
      <${y} label="Query" name="query" type="search" value=${n.query} onInput=${o("query")} required
        placeholder="what the agent is asked" class="wide" />
      <${y} label="Namespace" name="namespace" value=${n.namespace} onInput=${o("namespace")} placeholder="default" />
      <${y} label="User" name="user_id" value=${n.user_id} onInput=${o("user_id")} />
      <${y} label="Session" name="session_id" value=${n.session_id} onInput=${o("session_id")} />
      <${y} label="Agent" name="agent_id" value=${n.agent_id} onInput=${o("agent_id")} />
      <${R} label="Mode" name="mode" value=${n.mode} onChange=${o("mode")}
        options=${["hybrid","lexical","vector","overlap"]} any="default (hybrid)" />
      <${R} label="Scope" name="scope" value=${n.scope} onChange=${o("scope")} options=${ht} />
      <${y} label="Category" name="category" value=${n.category} onInput=${o("category")} />
      <${y} label="Limit" name="limit" type="number" min="1" max="100" value=${n.limit} onInput=${o("limit")} />
      <${y} label="Min score" name="min_score" type="number" min="0" max="1" step="0.05"
        value=${n.min_score} onInput=${o("min_score")} />
      <${y} label="Cluster" name="cluster" type="number" min="0" value=${n.cluster} onInput=${o("cluster")} />
      <label class="field check" for="inc-arch"><input id="inc-arch" type="checkbox"
        checked=${n.include_archived==="true"} onChange=${i=>o("include_archived")(i.currentTarget.checked?"true":"")} />
        <span>Include archived</span></label>
      <label class="field check" for="inc-sup"><input id="inc-sup" type="checkbox"
        checked=${n.include_superseded==="true"} onChange=${i=>o("include_superseded")(i.currentTarget.checked?"true":"")} />
        <span>Include superseded</span></label>
      <${y} label="As of (UTC)" name="as_of" type="datetime-local" value=${n.as_of} onInput=${o("as_of")} />
      <div class="actions"><button type="submit">Recall</button></div>
    </form>
    <${x} error=${r.error} />
    ${r.loading&&e.query&&u`<p class="loading">Recalling…</p>`}
    ${r.data&&u`<section aria-label="hits">
      <p class="muted" aria-live="polite">${l.length} hits</p>
      <ol class="hits">${l.map(i=>u`<li key=${i.memory.id}>
        <div class="row"><a href=${`/ui/memories?id=${i.memory.id}${i.memory.user_id?`&user_id=${encodeURIComponent(i.memory.user_id)}`:""}`}
          class="memtext">${O(i.memory)}</a><strong class="score">${i.score.toFixed(3)}</strong></div>
        <div class="signals">${Qt.map(([d,p])=>{const $=(i.signals||{})[p],b=p==="lexical_score"&&$!==void 0?$/_:$;return u`<${Zt} label=${d} value=${b} raw=${$} />`})}
        ${i.signals&&i.signals.lexical_rank&&u`<span class="muted">lexical rank ${i.signals.lexical_rank}</span>`}
        ${i.signals&&i.signals.vector_rank&&u`<span class="muted"> · vector rank ${i.signals.vector_rank}</span>`}
        </div>
        <div class="muted"><span class=${`state ${i.memory.state}`}>${i.memory.state}</span>
          · ${en(i.memory)}
          ${i.memory.superseded_by&&u` · superseded by <a href=${`/ui/memories?id=${i.memory.superseded_by}${i.memory.user_id?`&user_id=${encodeURIComponent(i.memory.user_id)}`:""}`}>${i.memory.superseded_by}</a>`}
          · ${i.memory.scope} · ${i.memory.user_id||"no user"} · ${i.memory.created_at}</div>
      </li>`)}</ol></section>`}`}function Ve({f:t,state:e,title:n,cursors:a,onPage:o}){const[r,s]=g(null),l=E(()=>I("/v1/memories",{namespace:t.namespace,user_id:t.user_id,scope:"declarative",category:t.type,state:e,cursor:a[a.length-1],limit:50}),[t.namespace,t.user_id,t.type,e,a.join()]),_=l.data&&l.data.items||[],i=`${e}-title`;return u`<section aria-labelledby=${i}>
    <h2 id=${i}>${n}</h2>
    <${x} error=${l.error} />
    <table><thead><tr><th scope="col">Entry</th><th scope="col">Type</th><th scope="col">Confidence</th>
      <th scope="col">Source</th><th scope="col">${e==="superseded"?"Replaced by":"Updated"}</th></tr></thead>
    <tbody>${_.map(d=>u`<tr key=${d.id}>
      <td><button type="button" class="link" aria-expanded=${r===d.id}
        onClick=${()=>s(r===d.id?null:d.id)}>${d.content}</button>
        ${r===d.id&&u`<${bt} id=${d.id} user=${t.user_id} />`}</td>
      <td>${d.type||d.category}</td>
      <td>${d.confidence??"stated"}</td><td>${d.source}</td>
      <td>${e==="superseded"?u`<a href=${`/ui/memories?id=${d.superseded_by}&user_id=${encodeURIComponent(t.user_id)}`}>${d.superseded_by}</a>`:A(d.updated_at)}</td></tr>`)}</tbody></table>
    ${!l.loading&&!_.length&&!l.error&&u`<p class="muted">None.</p>`}
    ${a&&u`<${yt} cursors=${a} next=${l.data&&l.data.next_cursor} onPage=${o} />`}
  </section>`}function nn({f:t,onDecided:e}){const n=E(()=>I("/v1/proposals",{user_id:t.user_id}),[t.user_id]),[a,o]=Ne(),[r,s]=g(null),[l,_]=g(null),i=n.data&&n.data.proposals||[],d=async c=>{_(null);try{await B(`/v1/proposals/${c.id}/confirm`,{user_id:t.user_id}),s(`Accepted: ${c.content}`),n.reload(),e()}catch($){_($)}},p=c=>o(`Reject the proposal "${c.content}"?`,async()=>{await B(`/v1/proposals/${c.id}/reject`,{user_id:t.user_id}),s(`Rejected: ${c.content}`),n.reload()},"Reject");return u`<section aria-labelledby="pending-title">
    <h2 id="pending-title">Pending confirmations</h2>
    ${r&&u`<${D}>${r}</${D}>`}
    <${x} error=${n.error||l} />
    ${!n.loading&&!i.length&&!n.error&&u`<p class="muted">Nothing waits for confirmation.</p>`}
    <ul class="proposals">${i.map(c=>u`<li key=${c.id}>
      <div><strong>${c.content}</strong> <${ie}>${c.type||c.kind}</${ie}>
        <span class="muted"> from ${c.source}${c.agent_id?` (${c.agent_id})`:""}, confidence ${c.confidence??"—"},
        expires ${A(c.expires_at)}</span></div>
      ${c.supersedes&&u`<div class="muted">would replace: <del>${c.supersedes.content}</del></div>`}
      <div class="actions"><button type="button" onClick=${()=>d(c)}>Accept</button>
        <button type="button" class="danger" onClick=${()=>p(c)}>Reject</button></div>
    </li>`)}</ul>
    ${a}
  </section>`}function an({params:t}){const e=L(t,["c","sc"]),[n,a]=g(e);N(()=>a(e),[t.toString()]);const[o,r]=g(0),s=l=>_=>a({...n,[l]:_});return u`<h1>Declarative memory</h1>
    <form class="filters" aria-label="filters" onSubmit=${l=>{l.preventDefault(),T("declarative",n)}}>
      <${y} label="User" name="user_id" value=${n.user_id} onInput=${s("user_id")} required />
      <${y} label="Namespace" name="namespace" value=${n.namespace} onInput=${s("namespace")} placeholder="default" />
      <${R} label="Type" name="type" value=${n.type} onChange=${s("type")} options=${Ft} />
      <div class="actions"><button type="submit">Show</button></div>
    </form>
    ${e.user_id?u`<${nn} f=${e} onDecided=${()=>r(o+1)} />
        <${Ve} key=${`a${o}`} f=${e} state="active" title="Entries" cursors=${e.c||[]}
          onPage=${l=>T("declarative",{...e,c:l})} />
        <${Ve} key=${`s${o}`} f=${e} state="superseded" title="Superseded" cursors=${e.sc||[]}
          onPage=${l=>T("declarative",{...e,sc:l})} />`:u`<p class="muted">Declarative entries belong to one user: name the user.</p>`}`}const Ge=400;function on(t){const e=new Map,n=(o,r)=>{e.has(o)||e.set(o,{name:o,value:0,category:r?1:0}),e.get(o).value+=1},a=t.map(o=>(n(o.subject,!1),n(o.object,!o.object_id),{source:o.subject,target:o.object,value:o.predicate}));return{tooltip:{},legend:[{data:["entity","value"]}],series:[{type:"graph",layout:"force",roam:!0,draggable:!0,categories:[{name:"entity"},{name:"value"}],data:[...e.values()].map(o=>({...o,symbolSize:12+Math.min(24,o.value*3)})),links:a,label:{show:!0,position:"right"},edgeLabel:{show:!0,formatter:o=>o.data.value,fontSize:10},edgeSymbol:["none","arrow"],force:{repulsion:160,edgeLength:110}}]}}function rn({params:t}){const e=L(t),[n,a]=g(e);N(()=>a(e),[t.toString()]);const o=p=>c=>a({...n,[p]:c}),r=e.as_of?new Date(e.as_of).toISOString():void 0,s=E(()=>I("/v1/graph/relations",{user_id:e.user_id,as_of:r,entity:e.entity,hops:e.entity?e.hops:void 0,limit:Ge}),[t.toString()]),l=s.data&&s.data.relations||[],_=H(()=>on(l),[s.data]),i=H(()=>[...new Set(l.flatMap(p=>p.object_id?[p.subject,p.object]:[p.subject]))].sort(),[s.data]),d=p=>T("graph",{...e,entity:p});return u`<h1>Knowledge graph</h1>
    <form class="filters" aria-label="graph filters" onSubmit=${p=>{p.preventDefault(),T("graph",n)}}>
      <${y} label="User" name="user_id" value=${n.user_id} onInput=${o("user_id")} />
      <${y} label="As of" name="as_of" type="datetime-local" value=${n.as_of} onInput=${o("as_of")} />
      <${y} label="Entity" name="entity" value=${n.entity} onInput=${o("entity")} list="entity-names" />
      <datalist id="entity-names">${i.map(p=>u`<option value=${p} />`)}</datalist>
      <${R} label="Hops" name="hops" value=${n.hops} onChange=${o("hops")} options=${["1","2","3"]} any="1" />
      <div class="actions"><button type="submit">Show</button>
        ${e.entity&&u`<button type="button" onClick=${()=>T("graph",{...e,entity:void 0,hops:void 0})}>
          Whole graph</button>`}</div>
    </form>
    <${x} error=${s.error} />
    <p class="muted" aria-live="polite">${s.loading?"Loading…":`${l.length} relations, ${i.length} entities${e.as_of?`, as of ${A(r)}`:", as they hold now"}`}
      ${s.data&&s.data.truncated?`; the first ${Ge} shown: pick an entity for its neighbourhood`:""}</p>
    ${l.length>0&&u`<${J} option=${_} height=${480} testid="graph"
      label=${`graph of ${l.length} relations between ${i.length} entities`} />`}
    <section aria-labelledby="rel-title"><h2 id="rel-title">Relations</h2>
      <table class="relations"><thead><tr><th scope="col">Subject</th><th scope="col">Predicate</th>
        <th scope="col">Object</th><th scope="col">Valid from</th><th scope="col">Until</th><th scope="col">Confidence</th></tr></thead>
      <tbody>${l.map(p=>u`<tr key=${p.id}>
        <td><button type="button" class="link" onClick=${()=>d(p.subject)}>${p.subject}</button></td>
        <td>${p.predicate}</td>
        <td>${p.object_id?u`<button type="button" class="link" onClick=${()=>d(p.object)}>${p.object}</button>`:p.object}</td>
        <td>${A(p.valid_at||p.created_at)}</td><td>${A(p.invalid_at)}</td><td>${p.confidence.toFixed(2)}</td>
      </tr>`)}</tbody></table>
      ${!s.loading&&!l.length&&!s.error&&u`<p class="muted">No relations${e.user_id?"":" for memories without a user; name a user"}.</p>
        <p class="muted hint">The graph is read from memories by graph extraction, which is off
          by default: start the server with <code>--graph-extractor offline</code> (sentence
          patterns, no model) or <code>llm</code> (the chat model), and the memories written
          from then on are read into it.</p>`}
    </section>`}function gt(t){const e=[],n=new Date;for(let a=t-1;a>=0;a--){const o=new Date(Date.UTC(n.getUTCFullYear(),n.getUTCMonth(),n.getUTCDate()-a));e.push(o.toISOString().slice(0,10))}return e}function sn(t,e){const n=gt(e),a=[...new Set(t.growth.map(o=>o.scope))];return{tooltip:{trigger:"axis"},legend:{data:a},grid:{left:48,right:16,bottom:48},xAxis:{type:"category",data:n},yAxis:{type:"value",name:"created"},series:a.map(o=>{const r=new Map(t.growth.filter(s=>s.scope===o).map(s=>[s.day,s.count]));return{name:o,type:"bar",stack:"scope",data:n.map(s=>r.get(s)||0)}})}}function ln(t,e){const n=gt(e),a=t.access_log?t.accesses:t.last_accessed,o=new Map(a.map(s=>[s.day,s.count])),r=t.access_log?"accesses":"memories last accessed";return{tooltip:{trigger:"axis"},grid:{left:48,right:16,bottom:48},xAxis:{type:"category",data:n},yAxis:{type:"value",name:t.access_log?"accesses":"last accessed"},series:[{name:r,type:"line",areaStyle:{},data:n.map(s=>o.get(s)||0)}]}}function cn(t){const e=t.items.map((r,s)=>`${s+1}. ${O(r).slice(0,28)}`),n=[];let a=1;t.matrix.forEach((r,s)=>r.forEach((l,_)=>{n.push([_,s,Number(l.toFixed(3))]),s!==_&&(a=Math.min(a,l))}));const o=Math.max(-1,Math.floor(a*10)/10);return{tooltip:{formatter:r=>`${e[r.value[1]]}<br>${e[r.value[0]]}<br>similarity ${r.value[2]}`},grid:{left:220,right:24,top:16,bottom:120},xAxis:{type:"category",data:e.map((r,s)=>String(s+1))},yAxis:{type:"category",data:e,inverse:!0,axisLabel:{width:200,overflow:"truncate"}},visualMap:{min:o,max:1,calculable:!0,orient:"horizontal",left:"center",bottom:8},series:[{type:"heatmap",data:n,progressive:0}]}}function me({title:t,counts:e}){return u`<div class="card"><h3>${t}</h3><dl class="fields">
    ${Object.entries(e).map(([n,a])=>u`<dt>${n}</dt><dd>${a}</dd>`)}</dl></div>`}function dn({f:t}){const e=E(()=>I("/v1/analytics/similarity",{user_id:t.user_id,namespace:t.namespace,cluster:t.cluster,limit:20}),[t.user_id,t.namespace,t.cluster]),n=H(()=>e.data&&cn(e.data),[e.data]);return u`<section aria-labelledby="heat-title"><h2 id="heat-title">Similarity of ${t.cluster?`topic ${t.cluster}`:"the first memories"}</h2>
    <${x} error=${e.error} />
    ${e.data&&(e.data.items.length<2?u`<p class="muted">Fewer than two memories to compare.</p>`:u`<${J} option=${n} height=${560} testid="heatmap"
          label=${`similarity heatmap of ${e.data.items.length} memories`} />`)}
  </section>`}function un({f:t}){const e=E(()=>I("/v1/clusters",{user_id:t.user_id,namespace:t.namespace}),[t.user_id,t.namespace]),n=e.error&&e.error.status===404;return u`<section aria-labelledby="clusters-title"><h2 id="clusters-title">Topics</h2>
    ${n?u`<p class="muted">Not clustered yet: run the cluster job (Operations).</p>`:u`<${x} error=${e.error} />`}
    ${e.data&&u`<p class="muted">${e.data.clusters.length} topics fitted on ${e.data.fitted_on} memories,
      silhouette ${e.data.silhouette.toFixed(2)}</p>
      <table><thead><tr><th scope="col">Topic</th><th scope="col">Label</th><th scope="col">Size</th><th scope="col"></th></tr></thead>
      <tbody>${e.data.clusters.map(a=>u`<tr key=${a.id}><td>${a.id}</td><td>${a.label}</td><td>${a.size}</td>
        <td><button type="button" class="link" onClick=${()=>T("analytics",{...t,cluster:a.id})}>
          Heatmap of topic ${a.id}</button></td></tr>`)}</tbody></table>`}
  </section>`}function _n({params:t}){const e=L(t),[n,a]=g(e);N(()=>a(e),[t.toString()]);const o=i=>d=>a({...n,[i]:d}),r=Math.min(366,Math.max(1,Number(e.days)||30)),s=E(()=>I("/v1/analytics",{namespace:e.namespace,user_id:e.user_id,scope:e.scope,days:r,top:10}),[e.namespace,e.user_id,e.scope,r]),l=H(()=>s.data&&sn(s.data,r),[s.data]),_=H(()=>s.data&&ln(s.data,r),[s.data]);return u`<h1>Analytics</h1>
    <form class="filters" aria-label="filters" onSubmit=${i=>{i.preventDefault(),T("analytics",n)}}>
      <${y} label="User" name="user_id" value=${n.user_id} onInput=${o("user_id")} />
      <${y} label="Namespace" name="namespace" value=${n.namespace} onInput=${o("namespace")} placeholder="default" />
      <${y} label="Days" name="days" type="number" min="1" max="366" value=${n.days||"30"} onInput=${o("days")} />
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
        <${J} option=${l} testid="growth" label=${`memories created per day over ${r} days, by scope`} /></section>
      <section aria-labelledby="access-title"><h2 id="access-title">Access over time</h2>
        ${s.data.access_log?u`<p class="muted">Recalls and reads by id per day, from the access log.</p>
            <${J} option=${_} testid="access" label=${`accesses per day over ${r} days`} />`:u`<p class="muted">Memories by the day they were last recalled or read. Start the server with <code>--access-log scores</code> to count every access.</p>
            <${J} option=${_} testid="access" label=${`memories by day of last access over ${r} days`} />`}</section>
      <section aria-labelledby="top-title"><h2 id="top-title">Most accessed</h2>
        ${s.data.top_accessed.length?u`<table><thead><tr><th scope="col">Memory</th><th scope="col">Accesses</th>
          <th scope="col">User</th></tr></thead><tbody>${s.data.top_accessed.map(i=>u`<tr key=${i.id}>
          <td><a href=${`/ui/memories?id=${i.id}${i.user_id?`&user_id=${encodeURIComponent(i.user_id)}`:""}`}>${O(i).slice(0,160)}</a></td>
          <td>${i.access_count}</td><td>${i.user_id||""}</td></tr>`)}</tbody></table>`:u`<p class="muted">No memory was accessed yet.</p>`}</section>`}
    ${e.user_id?u`<${dn} f=${e} /><${un} f=${e} />`:u`<${D}>Name a user for the similarity heatmap and their topics.</${D}>`}`}const pn=["expire","consolidate","promote","prune","archive","cluster"];function $n(){const t=E(()=>I("/readyz"),[]),e=E(()=>I("/v1/stats"),[]);return u`<section aria-labelledby="health-title"><h2 id="health-title">Store</h2>
    <${x} error=${e.error||t.error} />
    ${e.data&&u`<div class="cards">
      <div class="card"><h3>Health</h3><p class="big">${e.data.healthy&&t.data?"ok":"unavailable"}</p>
        <p class="muted">${e.data.backend} · tenant ${e.data.tenant}</p></div>
      <div class="card"><h3>Memories</h3><p class="big">${e.data.total}</p>
        ${e.data.state&&e.data.state.records>0&&u`<p class="muted" data-testid="app-state">not counted: ${e.data.state.records} records of application state (checkpoints) in ${e.data.state.namespaces} namespaces</p>`}</div>
      <div class="card"><h3>By namespace</h3><dl class="fields">${e.data.namespaces.map(n=>u`<dt>${n.namespace}</dt><dd>${n.count}</dd>`)}</dl></div></div>`}
  </section>`}function Ye({job:t}){const e=t.total?Math.round(100*t.done/t.total):t.state==="done"?100:0;return u`<progress max="100" value=${e} aria-label=${`job ${t.id} ${e}%`}></progress>
    <span class="muted"> ${t.done} of ${t.total||"?"}</span>`}function mn(){const[t,e]=g({jobs:["expire","consolidate","promote"],user_id:"",dry_run:!1,max_memories:""}),[n,a]=g(null),[o,r]=g(null),s=E(()=>I("/v1/jobs"),[]);N(()=>{if(!o||o.state!=="running")return;const i=setTimeout(async()=>{try{r(await I(`/v1/jobs/${o.id}`))}catch(d){a(d)}},500);return()=>clearTimeout(i)},[o]),N(()=>{o&&o.state!=="running"&&s.reload()},[o&&o.state]);const l=i=>e({...t,jobs:t.jobs.includes(i)?t.jobs.filter(d=>d!==i):[...t.jobs,i]});return u`<section aria-labelledby="maint-title"><h2 id="maint-title">Maintenance</h2>
    <form class="filters" onSubmit=${async i=>{i.preventDefault(),a(null);try{const d={jobs:t.jobs,dry_run:t.dry_run,background:!0};t.user_id&&(d.user_id=t.user_id),t.max_memories&&(d.max_memories=Number(t.max_memories)),r(await B("/v1/maintenance",d))}catch(d){a(d)}}} aria-label="maintenance">
      <fieldset><legend>Jobs</legend>${pn.map(i=>u`<label class="check" for=${`job-${i}`}>
        <input id=${`job-${i}`} type="checkbox" checked=${t.jobs.includes(i)} onChange=${()=>l(i)} /> ${i}</label>`)}</fieldset>
      <${y} label="Only user" name="m-user" value=${t.user_id} onInput=${i=>e({...t,user_id:i})} />
      <${y} label="Prune to (memories per user)" name="m-max" type="number" min="1" value=${t.max_memories}
        onInput=${i=>e({...t,max_memories:i})} />
      <label class="check" for="m-dry"><input id="m-dry" type="checkbox" checked=${t.dry_run}
        onChange=${i=>e({...t,dry_run:i.currentTarget.checked})} /> Dry run</label>
      <div class="actions"><button type="submit" disabled=${o&&o.state==="running"}>Run</button></div>
    </form>
    <${x} error=${n} />
    ${o&&u`<div class="job" aria-live="polite">Job ${o.id}: <strong>${o.state}</strong> <${Ye} job=${o} />
      ${o.error&&u`<${x} error=${{code:o.error_code,message:o.error}} />`}
      ${o.report&&u`<pre>${JSON.stringify(o.report,null,2)}</pre>`}</div>`}
    <h3>Jobs of this server</h3>
    ${s.error?u`<${x} error=${s.error} />`:s.data&&(s.data.items.length?u`<table><thead><tr><th scope="col">Job</th><th scope="col">Kind</th><th scope="col">State</th><th scope="col">Progress</th></tr></thead>
        <tbody>${s.data.items.map(i=>u`<tr key=${i.id}><td>${i.id}</td><td>${i.kind}</td><td>${i.state}</td>
          <td><${Ye} job=${i} /></td></tr>`)}</tbody></table>`:u`<p class="muted">No jobs yet.</p>`)}
  </section>`}function hn(){const t=E(()=>I("/v1/admin/keys"),[]),[e,n]=g({tenant:"",label:"",admin:!1,operator:!1}),[a,o]=g(null),[r,s]=g(null),[l,_]=Ne(),i=async p=>{p.preventDefault(),s(null);try{const c={tenant:e.tenant,admin:e.admin,operator:e.operator};e.label&&(c.label=e.label),o(await B("/v1/admin/keys",c)),t.reload()}catch(c){s(c)}},d=p=>_(`Revoke key ${p.id}${p.label?` (${p.label})`:""} of tenant ${p.tenant}? Clients using it stop working.`,async()=>{await Ee(`/v1/admin/keys/${p.id}`),t.reload()},"Revoke");return u`<section aria-labelledby="keys-title"><h2 id="keys-title">API keys</h2>
    ${t.error?u`<${x} error=${t.error} />`:t.data&&u`<table><thead><tr><th scope="col">Id</th>
      <th scope="col">Tenant</th><th scope="col">Label</th><th scope="col">Rights</th><th scope="col">Created</th><th scope="col"></th></tr></thead>
      <tbody>${t.data.keys.map(p=>u`<tr key=${p.id}><td>${p.id}</td><td>${p.tenant}</td><td>${p.label||""}</td>
        <td>${[p.admin&&"admin",p.operator&&"operator"].filter(Boolean).join(", ")||"user"}</td><td>${A(p.created_at)}</td>
        <td><button type="button" class="danger" onClick=${()=>d(p)}>Revoke</button></td></tr>`)}</tbody></table>
      ${!t.data.keys.length&&u`<p class="muted">No keys: the server is open on loopback. The first key
        made ends that: from then on every request, this page's too, needs a key.</p>`}`}
    ${!t.error&&u`<form class="filters" onSubmit=${i} aria-label="new key">
      <${y} label="Tenant" name="k-tenant" value=${e.tenant} onInput=${p=>n({...e,tenant:p})} required />
      <${y} label="Label" name="k-label" value=${e.label} onInput=${p=>n({...e,label:p})} />
      <label class="check" for="k-admin"><input id="k-admin" type="checkbox" checked=${e.admin}
        onChange=${p=>n({...e,admin:p.currentTarget.checked})} /> Admin</label>
      <label class="check" for="k-op"><input id="k-op" type="checkbox" checked=${e.operator}
        onChange=${p=>n({...e,operator:p.currentTarget.checked})} /> Operator</label>
      <div class="actions"><button type="submit">Create key</button></div></form>`}
    <${x} error=${r} />
    ${a&&u`<${D}>New key for ${a.info.tenant} (shown once): <code>${a.key}</code></${D}>`}
    ${l}
  </section>`}function fn(){return u`<h1>Operations</h1><${$n} /><${mn} /><${hn} />`}const Qe=[["memories","Memories",Gt],["recall","Recall playground",tn],["declarative","Declarative",an],["graph","Graph",rn],["analytics","Analytics",_n],["operations","Operations",fn]],yn=["namespace","user_id"];function bn({onDone:t}){const[e,n]=g("");return u`<form class="keyprompt" onSubmit=${o=>{o.preventDefault(),$t(e.trim()),t()}} aria-labelledby="key-title">
    <h2 id="key-title">API key</h2>
    <p>This server needs an API key. It is kept for this browser session only.</p>
    <label class="field" for="api-key"><span>Key</span>
      <input id="api-key" type="password" autocomplete="off" value=${e}
        onInput=${o=>n(o.currentTarget.value)} required /></label>
    <button type="submit">Use key</button>
  </form>`}function gn(){const t=Rt(),[e,n]=g(!1),[a,o]=g(0);N(()=>Dt(()=>n(!0)),[]);const r=Qe.find(([d])=>d===t.page),s={};yn.forEach(d=>t.params.get(d)&&(s[d]=t.params.get(d)));const l=(d,p)=>{d.button!==0||d.metaKey||d.ctrlKey||d.shiftKey||(d.preventDefault(),T(p,s))},_=d=>`/ui/${d}${new URLSearchParams(s).size?`?${new URLSearchParams(s)}`:""}`,i=r&&r[2];return u`<header>
      <a class="brand" href="/ui/memories">muisti</a>
      <nav aria-label="pages">
        ${Qe.map(([d,p])=>u`<a href=${_(d)} onClick=${c=>l(c,d)}
              aria-current=${t.page===d?"page":void 0}>${p}</a>`)}
      </nav>
      ${pt()&&u`<button type="button" class="link" onClick=${()=>{$t(""),o(a+1)}}>Forget key</button>`}
    </header>
    <main id="main">
      ${e&&u`<${bn} onDone=${()=>{n(!1),o(a+1)}} />`}
      ${i?u`<${i} key=${`${t.page}-${a}`} params=${t.params} />`:u`<div class="error" role="alert">No page ${t.page}.
            <a href="/ui/memories">Memories</a></div>`}
    </main>
    <footer><a href="/ui/assets/third-party-licenses.txt">Third-party licences</a></footer>`}const vt=document.getElementById("app");vt.textContent="";Et(u`<${gn} />`,vt);
