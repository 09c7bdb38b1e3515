#!/usr/bin/env node
// The Node.js Trino client (npm `trino-client`, the one trinodb publishes)
// against `squall serve`.
//
// Usage: node trino_js_client.js PATH_TO_SQUALL_BINARY
// Run by `cargo test --workspace` through tests/api/js_client.rs; the
// client comes from `npm ci --prefix planner/cli/tests/js`.
//
// It generates TPC-H SF 0.01 into a temporary folder, starts `squall serve
// --port 0` on loopback, and through the client:
// - runs TPC-H Q1 and Q6 and compares every value with `squall query
//   --format csv` on the same catalog, and checks the column types;
// - reads 60,175 rows of lineitem, which the server sends in many pages;
// - checks a missing column fails with COLUMN_NOT_FOUND and state FAILED;
// - sends a session property (the client's X-Trino-Session header) that
//   fails a long query with EXCEEDED_TIME_LIMIT;
// - cancels a long query through the client's cancel (DELETE
//   /v1/query/{id}) and reads USER_CANCELED back through queryInfo;
// - stops the server with SIGTERM and checks it exits 0.
//
// Exit 0 when every check passes, 1 on a failed check, 3 when the
// `trino-client` module is missing.

'use strict';

const { spawn, spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const readline = require('readline');

let Trino, BasicAuth;
try {
  ({ Trino, BasicAuth } = require('trino-client'));
} catch (e) {
  console.error(
    'the `trino-client` npm module is missing: run `npm ci --prefix planner/cli/tests/js`'
  );
  process.exit(3);
}

const QUERIES = path.join(__dirname, '..', '..', '..', '..', 'bench', 'tpch', 'queries');
const LONG = 'select count(*) from lineitem a, lineitem b where a.l_orderkey + b.l_partkey < 0';

function check(cond, what) {
  if (!cond) throw new Error(what);
}

function csvRows(text) {
  // `squall query --format csv` quotes a cell holding a comma or a quote.
  const rows = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const cells = [];
    let cell = '', quoted = false;
    for (let i = 0; i < line.length; i++) {
      const c = line[i];
      if (quoted) {
        if (c === '"' && line[i + 1] === '"') { cell += '"'; i++; }
        else if (c === '"') quoted = false;
        else cell += c;
      } else if (c === '"') quoted = true;
      else if (c === ',') { cells.push(cell); cell = ''; }
      else cell += c;
    }
    cells.push(cell);
    rows.push(cells);
  }
  return rows;
}

function squallCsv(binary, catalog, sql) {
  const out = spawnSync(binary, ['query', '--catalog', catalog, '--format', 'csv', '--', sql], {
    encoding: 'utf8',
  });
  check(out.status === 0, `squall query failed (${out.status}): ${out.stderr}`);
  const rows = csvRows(out.stdout);
  return { header: rows[0], rows: rows.slice(1) };
}

// A value as the client hands it (JSON: numbers, decimals as text) equals a
// CSV cell of `squall query`.
function sameValue(got, want) {
  if (got === null) return want === '';
  if (typeof got === 'number') return Math.abs(got - Number(want)) <= 1e-9 * Math.max(1, Math.abs(got));
  return String(got) === want;
}

// Runs `sql` to its end: columns (name:type), rows, the error and last state.
async function run(trino, sql) {
  const iter = await trino.query(sql);
  const out = { columns: null, rows: [], error: null, state: null, pages: 0 };
  for await (const r of iter) {
    if (r.columns) out.columns = r.columns.map((c) => `${c.name}:${c.type}`);
    if (r.data) { out.rows.push(...r.data); out.pages++; }
    if (r.error) out.error = r.error;
    if (r.stats) out.state = r.stats.state;
  }
  return out;
}

function startServer(binary, catalog, logFile) {
  const env = { ...process.env };
  delete env.SQUALL_API_TOKEN;
  const log = fs.openSync(logFile, 'w');
  const proc = spawn(binary, ['serve', '--port', '0', '--catalog', catalog], {
    env,
    stdio: ['ignore', 'pipe', log],
  });
  return new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: proc.stdout });
    lines.once('line', (line) => {
      const prefix = 'listening on http://';
      if (!line.startsWith(prefix)) reject(new Error(`unexpected first line: ${line}`));
      else resolve({ proc, server: `http://${line.slice(prefix.length).trim()}` });
    });
    proc.once('exit', (code) => reject(new Error(`squall serve exited with ${code}`)));
  });
}

async function checks(binary, catalog, server) {
  const client = (extra = {}) =>
    Trino.create({ server, catalog: 'squall', schema: 'tpch', auth: new BasicAuth('js'), ...extra });
  const trino = client();

  for (const n of [1, 6]) {
    const sql = fs.readFileSync(path.join(QUERIES, `q${String(n).padStart(2, '0')}.sql`), 'utf8');
    const got = await run(trino, sql);
    check(got.error === null, `q${n}: ${JSON.stringify(got.error)}`);
    check(got.state === 'FINISHED', `q${n} ended ${got.state}`);
    const want = squallCsv(binary, catalog, sql);
    const names = got.columns.map((c) => c.split(':')[0]);
    check(JSON.stringify(names) === JSON.stringify(want.header), `q${n}: columns ${names} != ${want.header}`);
    check(got.rows.length === want.rows.length && got.rows.length > 0, `q${n}: ${got.rows.length} rows, expected ${want.rows.length}`);
    got.rows.forEach((row, i) =>
      row.forEach((v, j) =>
        check(sameValue(v, want.rows[i][j]), `q${n}: row ${i} column ${names[j]}: ${v} != ${want.rows[i][j]}`)
      )
    );
    if (n === 1) {
      const types = Object.fromEntries(got.columns.map((c) => c.split(':')));
      check(types.l_returnflag === 'varchar', `q1 types ${got.columns}`);
      check(/^decimal\(\d+,\d+\)$/.test(types.sum_qty), `q1 types ${got.columns}`);
      check(types.count_order === 'bigint', `q1 types ${got.columns}`);
    }
    console.log(`q${n}: ${got.rows.length} rows match`);
  }

  // A result of many pages arrives whole, each row once.
  const all = await run(trino, 'select l_orderkey, l_linenumber, l_comment from lineitem');
  const count = await run(trino, 'select count(*), count(distinct (l_orderkey, l_linenumber)) from lineitem');
  check(all.error === null && count.error === null, `lineitem: ${JSON.stringify(all.error || count.error)}`);
  const keys = new Set(all.rows.map((r) => `${r[0]}/${r[1]}`));
  check(all.rows.length === count.rows[0][0], `lineitem: ${all.rows.length} rows, count(*) says ${count.rows[0][0]}`);
  check(keys.size === count.rows[0][1], `lineitem: ${keys.size} distinct keys of ${count.rows[0][1]}`);
  check(all.pages > 1, `lineitem came in ${all.pages} page(s)`);
  console.log(`pages: ${all.rows.length} rows in ${all.pages} pages`);

  // A missing column fails the query with Trino's error name.
  const bad = await run(trino, 'select no_such_column from nation');
  check(bad.state === 'FAILED', `bad column ended ${bad.state}`);
  check(bad.error && bad.error.errorName === 'COLUMN_NOT_FOUND', `bad column: ${JSON.stringify(bad.error)}`);
  check(bad.error.message.includes('no_such_column'), `bad column: ${bad.error.message}`);
  console.log('errors: ok');

  // A session property sent in the client's X-Trino-Session header.
  const limited = client({ session: { 'squall.query.timeout_secs': '1' } });
  const timed = await run(limited, LONG);
  check(timed.error && timed.error.errorName === 'EXCEEDED_TIME_LIMIT', `timeout: ${JSON.stringify(timed.error)}`);
  console.log('session timeout: ok');

  // The client's cancel ends a long query; queryInfo reads why.
  const iter = await trino.query(LONG);
  const id = iter.iter.queryResult.id;
  check(typeof id === 'string' && id.length > 0, `no query id: ${JSON.stringify(iter.iter.queryResult)}`);
  await new Promise((r) => setTimeout(r, 1000));
  await trino.cancel(id);
  const info = await trino.queryInfo(id);
  check(info.errorCode && info.errorCode.name === 'USER_CANCELED', `after cancel: ${JSON.stringify(info).slice(0, 400)}`);
  const after = await iter.next();
  const state = after.value && after.value.stats && after.value.stats.state;
  check(state === 'FAILED' || state === 'CANCELED', `the cancelled query's next page says ${state}`);
  const one = await run(trino, 'select 1');
  check(one.rows.length === 1 && one.rows[0][0] === 1, `after cancel: ${JSON.stringify(one)}`);
  console.log('cancel: ok');
}

async function main() {
  const binary = path.resolve(process.argv[2] || '');
  check(fs.existsSync(binary), `no squall binary at ${binary}`);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'squall-js-'));
  try {
    const catalog = path.join(tmp, 'tpch');
    const gen = spawnSync(binary, ['tpch', 'gen', '--sf', '0.01', '--out', catalog, '--row-group-rows', '2000'], {
      encoding: 'utf8',
    });
    check(gen.status === 0, `tpch gen failed: ${gen.stderr}`);
    const logFile = path.join(tmp, 'serve.log');
    const { proc, server } = await startServer(binary, catalog, logFile);
    const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
    try {
      await checks(binary, catalog, server);
    } finally {
      proc.kill('SIGTERM');
    }
    const timer = setTimeout(() => proc.kill('SIGKILL'), 20000);
    const end = await exited;
    clearTimeout(timer);
    check(end.code === 0, `squall serve exited with ${JSON.stringify(end)}:\n${fs.readFileSync(logFile, 'utf8')}`);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  console.log('trino js client: all checks passed');
}

main().catch((e) => {
  console.error(`FAILED: ${e.stack || e.message}`);
  process.exit(1);
});
