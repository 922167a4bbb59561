// How long Ajv (as the TypeScript MCP SDK configures it) takes to compile every outputSchema
// of a tools/list result, and variants of those schemas, to see where listTools' time goes:
//   M=<node_modules with ajv and ajv-formats> node bench/mcp_ajv_compile.mjs TOOLS.json VARIANT
// TOOLS.json is one tools/list response line; VARIANT is one of full, trivial, nodesc,
// noevents, nosummary, inline, minimal-top, slim, slim-noerr, slim-noif.
import { createRequire } from 'module';
const require = createRequire(process.env.M + '/');
const fs = require('fs');
const Ajv = require('ajv').default; const addFormats = require('ajv-formats').default;
const tools = JSON.parse(fs.readFileSync(process.argv[2],'utf8')).result.tools.filter(t=>t.outputSchema);
function run(label, f) {
  const ajv = new Ajv({strict:false, validateFormats:true, validateSchema:false, allErrors:true}); addFormats(ajv);
  const s = performance.now(); for (const t of tools) ajv.compile(f(structuredClone(t.outputSchema))); console.log(label, (performance.now()-s).toFixed(1));
}
const variant = process.argv[3];
if (variant==='trivial') run('trivial', s=>({type:'object'}));
if (variant==='full') run('full', s=>s);
if (variant==='nodesc') run('nodesc', s=>JSON.parse(JSON.stringify(s,(k,v)=>k==='description'?undefined:v)));
if (variant==='noevents') run('noevents', s=>{s.properties.events={type:'array'}; delete s.$defs; return s;});
if (variant==='nosummary') run('nosummary', s=>{s.properties.summary={type:['object','null']}; return s;});
if (variant==='inline') run('inline', s=>{s.properties.events.items=s.$defs.aoi_event; delete s.$defs; return s;});
if (variant==='minimal-top') run('mintop', s=>({type:'object',required:['events','summary'],properties:{events:{type:'array',items:s.$defs.aoi_event},summary:{type:['object','null']}}}));
const slim = s=>({type:'object',description:s.description,required:['events','summary'],properties:{events:{type:'array',items:s.$defs.aoi_event},summary:{type:['object','null'],required:['ok'],properties:{ok:{type:'boolean'}}}}});
if (variant==='slim') run('slim', slim);
if (variant==='slim-noerr') run('slim-noerr', s=>{const x=slim(s); x.properties.events.items.allOf=x.properties.events.items.allOf.filter(a=>a.if.properties.type.const!=='aoi:error'); return x;});
if (variant==='slim-noif') run('slim-noif', s=>{const x=slim(s); delete x.properties.events.items.allOf; return x;});
const shapes = s => (s.$defs.aoi_event.allOf || []).filter(a => a.if.properties.type.const !== 'aoi:error');
if (variant==='slim-noreq') run('slim-noreq', s=>{const x=slim(s); x.properties.events.items.allOf=shapes(s).map(a=>({if:a.if,then:{properties:a.then.properties}})); return x;});
if (variant==='union') run('union', s=>{const x=slim(s); const props={type:{type:'string'}}; for (const a of shapes(s)) Object.assign(props, a.then.properties||{}); x.properties.events.items={type:'object',required:['type'],properties:props}; return x;});
if (variant==='anyof') run('anyof', s=>{const x=slim(s); const sh=shapes(s); x.properties.events.items={anyOf:sh.map(a=>({...a.then, properties:{...(a.then.properties||{}), type:{const:a.if.properties.type.const}}}))}; return x;});
if (variant==='defs-unref') run('defs-unref', s=>{const x=structuredClone(s); const ev=x.$defs.aoi_event; const shapes={}; for (const a of ev.allOf||[]) shapes[a.if.properties.type.const]=a.then; delete ev.allOf; x.$defs={...shapes, aoi_event: ev}; return x;});
