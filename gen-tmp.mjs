import Database from 'better-sqlite3';
const db = new Database(':memory:');
db.exec(`CREATE VIRTUAL TABLE f USING fts5(t, tokenize='unicode61 remove_diacritics 2'); CREATE VIRTUAL TABLE v USING fts5vocab(f, instance);`);
const ins = db.prepare('INSERT INTO f(rowid, t) VALUES (?, ?)');
const t0 = Date.now();
db.transaction(() => { for (let c = 1; c <= 0x10ffff; c++) { if (c >= 0xd800 && c < 0xe000) continue; ins.run(c, 'q' + String.fromCodePoint(c) + 'q'); } })();
const got = new Map();
for (const r of db.prepare('SELECT doc, term FROM v').iterate()) { const a = got.get(r.doc) ?? []; a.push(r.term); got.set(r.doc, a); }
let sep = 0, tok = 0, fold = 0, odd = 0; const ex=[];
for (let c = 1; c <= 0x10ffff; c++) { if (c >= 0xd800 && c < 0xe000) continue;
 const a = got.get(c) ?? [];
 if (a.length === 2 && a[0]==='q' && a[1]==='q') sep++;
 else if (a.length === 1 && a[0].startsWith('q') && a[0].endsWith('q')) { tok++; if (a[0].slice(1,-1) !== String.fromCodePoint(c)) fold++; }
 else { odd++; if (ex.length<20) ex.push([c.toString(16), a]); }
}
console.log({sep, tok, fold, odd, ms: Date.now()-t0}); console.log(JSON.stringify(ex));
