/**
 * A benchmark of usage reports (not a test; docs/performance.md "Usage reports" records its
 * numbers): one account with 10 million usage records over the 12 months of 2025 on PostgreSQL,
 * then through the real HTTP server
 *   - GET /billing/usage for each group_by over a month (2025-06) and over the year: the time of
 *     each (min, median, p95, max of --runs), and the rows it answered; the same for
 *     GET /billing/statements and two statements (June, December);
 *   - GET /billing/usage.csv over the month (every record, ~830,000 lines) and over one day: rows
 *     per second as the client reads them, and the server's resident memory (RSS) before, at its
 *     peak during the export (Linux: VmHWM after clear_refs, and sampled VmRSS), and after.
 *
 *   TEST_DATABASE_URL="$(scripts/ci-postgres.sh start)" ./platform node adapters/node-http/bench/usage-report.ts
 *
 * Processes: this one seeds, asks and measures; a child serves the platform (the Node shell's
 * serverLayer over PgPlatformStores, as `./platform start` on DATABASE_URL), so its memory is the
 * server's alone. The database is a fresh one on the server of DATABASE_URL or TEST_DATABASE_URL,
 * dropped at the end unless --keep-db.
 *
 * Seeding, in SQL, one INSERT ... SELECT generate_series per month (so every statement goes
 * through the rollup trigger of migration 0011, as the store's own inserts do: the rollups are
 * made exactly as in production): times spread evenly over the year at millisecond precision (as
 * the API writes them), 8 models of 4 services, 10 keys of the owner's account (created through
 * the API, so reports label them), the last 4 keys each an agent's (an agent calls with its own
 * key: the agent is the key's, so a day has at most models x keys rollups); models and keys skewed
 * (a few carry most calls), amounts in exact micro-credits, 2% of the calls covered by allowances.
 *
 * Flags (or env BENCH_<NAME>):
 *   --records 10000000  usage records to seed
 *   --runs 20           timed requests per report (after 3 warm-ups)
 *   --db NAME           use this database on the server, seeded already by an earlier --keep-db run
 *                       (seeding is skipped when it holds records); implies --keep-db
 *   --keep-db           do not drop the database at the end
 *   --explain           print the plans of the report and CSV page queries
 */
import { PgClient } from "@effect/sql-pg"
import { FirstStart } from "@model-platform/core/accounts"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import { type ChildProcess, fork } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import { fileURLToPath } from "node:url"
import { Database } from "@model-platform/postgres-stores/database"
import { PgPlatformStores } from "@model-platform/postgres-stores"
import { serverLayer } from "../src/Server.ts"
import { benchCatalogue } from "./fixtures.ts"

const argv = process.argv.slice(2)
const flag = (name: string): string | undefined => {
  const i = argv.indexOf(`--${name}`)
  if (i !== -1) return argv[i + 1]
  const inline = argv.find((a) => a.startsWith(`--${name}=`))
  return inline?.slice(name.length + 3) ?? process.env[`BENCH_${name.toUpperCase().replaceAll("-", "_")}`]
}
const has = (name: string) => argv.includes(`--${name}`) || process.env[`BENCH_${name.toUpperCase().replaceAll("-", "_")}`] === "1"
const num = (name: string, fallback: number) => Number(flag(name) ?? fallback)

const YEAR = 2025
const MONTH = `${YEAR}-06`
const DAY = `${YEAR}-06-15`
const GROUP_BYS = ["day", "service", "model", "key", "agent"] as const
const MODELS = [
  ["chat", "chat-large"], ["chat", "chat-small"], ["embeddings", "embed-small"], ["chat", "chat-code"],
  ["images", "image-xl"], ["forecast", "forecast-1"], ["embeddings", "embed-large"], ["chat", "chat-tiny"]
] as const

// ---- Role: server -------------------------------------------------------------------------

const runServer = async () => {
  const databaseUrl = process.env.BENCH_SERVER_DATABASE_URL!
  const stores = PgPlatformStores.pipe(Layer.provide(Database.layer({ databaseUrl, dataDir: "" })))
  const catalogue = await benchCatalogue("http://127.0.0.1:1/v1")
  const runtime = ManagedRuntime.make(
    serverLayer({ catalogue, port: 0, host: "127.0.0.1", ownerEmail: "owner@bench.local" }, stores)
  )
  const [server, owner] = await runtime.runPromise(Effect.all([HttpServer.HttpServer, FirstStart]))
  if (server.address._tag === "UnixPathAddress") throw new Error("expected a TCP address")
  process.on("message", (message: string) => {
    if (message === "stop") void runtime.dispose().then(() => process.exit(0))
    if (message === "cpu") {
      const { user, system } = process.cpuUsage()
      process.send!({ cpuMs: (user + system) / 1000 })
    }
  })
  process.send!({ port: server.address.port, secret: owner?.key.secret ?? null })
}

// ---- Measuring ----------------------------------------------------------------------------

/** kB of a line of /proc/<pid>/status (VmRSS: resident now, VmHWM: the peak since clear_refs). */
const procStatus = (pid: number, field: "VmRSS" | "VmHWM"): number | undefined => {
  try {
    const line = Fs.readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith(`${field}:`))
    return line === undefined ? undefined : Number(line.replace(/\D+/g, ""))
  } catch {
    return undefined
  }
}
/** Resets VmHWM to the current RSS (Linux >= 4.0); false where it cannot. */
const resetPeak = (pid: number): boolean => {
  try {
    Fs.writeFileSync(`/proc/${pid}/clear_refs`, "5")
    return true
  } catch {
    return false
  }
}
const mb = (kb: number | undefined) => (kb === undefined ? "?" : `${(kb / 1024).toFixed(1)} MB`)

/** A SQL string literal of an id the platform made (letters, digits, _ and -: nothing to escape). */
const literal = (id: string) => {
  if (!/^[A-Za-z0-9_-]+$/.test(id)) throw new Error(`not an id: ${id}`)
  return `'${id}'`
}
const textArray = (ids: ReadonlyArray<string>) => `ARRAY[${ids.map(literal).join(", ")}]`

const loadavg = () => Os.loadavg().map((l) => l.toFixed(2)).join(" ")

/** CPU time of a fixed loop: how fast this machine's cores are, to read the numbers below by. */
const calibrate = () => {
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  let sum = 0
  for (let i = 0; i < 1e8; i++) sum += i
  const { user, system } = process.cpuUsage(c0)
  return `1e8 additions in ${((user + system) / 1000).toFixed(0)} ms CPU (${(performance.now() - t0).toFixed(0)} ms wall)${sum < 0 ? "" : ""}`
}

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!
const ms = (n: number) => n.toFixed(1).padStart(7)

const main = async () => {
  const serverUrl = process.env.DATABASE_URL || process.env.TEST_DATABASE_URL
  if (serverUrl === undefined || serverUrl === "") {
    throw new Error("set TEST_DATABASE_URL (or DATABASE_URL) to a PostgreSQL server: TEST_DATABASE_URL=\"$(scripts/ci-postgres.sh start)\"")
  }
  const total = num("records", 10_000_000)
  const runs = num("runs", 20)
  const reuse = flag("db")
  const keepDb = has("keep-db") || reuse !== undefined
  console.log(
    `usage report benchmark: ${Os.cpus().length} CPUs (${Os.cpus()[0]?.model ?? "?"}), Node ${process.version}, ` +
      `load average ${loadavg()}; calibration: ${calibrate()}`
  )

  const withSql = <A>(url: string, f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
    Effect.runPromise(
      Effect.flatMap(SqlClient.SqlClient, f).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) })), Effect.scoped)
    )
  const dbName = reuse ?? `bench_usage_${Date.now().toString(36)}`
  if (reuse === undefined) await withSql(serverUrl, (sql) => sql.unsafe(`CREATE DATABASE ${dbName}`))
  const dbUrl = new URL(serverUrl)
  dbUrl.pathname = `/${dbName}`
  const url = dbUrl.toString()
  const sqlOn = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) => withSql(url, f)

  let child: ChildProcess | undefined
  try {
    // The server (migrations, first start's owner key).
    const t0 = performance.now()
    const started = await new Promise<{ port: number; secret: string | null; child: ChildProcess }>((resolve, reject) => {
      const c = fork(fileURLToPath(import.meta.url), ["--role=server"], {
        env: { ...process.env, BENCH_SERVER_DATABASE_URL: url },
        stdio: ["ignore", "inherit", "inherit", "ipc"]
      })
      c.once("exit", (code) => reject(new Error(`the server exited with ${code}`)))
      c.once("message", (m: { port: number; secret: string | null }) => resolve({ ...m, child: c }))
    })
    child = started.child
    const pid = child.pid!
    const base = `http://127.0.0.1:${started.port}`
    console.log(`server up in ${(performance.now() - t0).toFixed(0)} ms on database ${dbName}`)

    // The owner's key: printed once at first start; on a reused database, kept in a table of ours.
    await sqlOn((sql) => sql`CREATE TABLE IF NOT EXISTS bench_secret (secret text NOT NULL)`)
    if (started.secret !== null) await sqlOn((sql) => sql`INSERT INTO bench_secret VALUES (${started.secret})`)
    const secret = started.secret ?? (await sqlOn((sql) => sql<{ secret: string }>`SELECT secret FROM bench_secret`))[0]?.secret
    if (secret === undefined) throw new Error(`no owner key for ${dbName}`)
    const auth = { authorization: `Bearer ${secret}` }
    const api = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(base + path, {
        method,
        headers: { ...auth, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      const text = await response.text()
      if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 300)}`)
      return JSON.parse(text)
    }
    const accountId: string = (await api("GET", "/me")).id

    // ---- seed ----
    const existing = Number((await sqlOn((sql) => sql<{ n: string }>`SELECT count(*)::text AS n FROM usage_records`))[0]!.n)
    if (existing === 0) {
      const keyIds: Array<string> = []
      for (let i = 0; i < 10; i++) keyIds.push((await api("POST", "/keys", { name: `team-${i}`, permissions: ["inference"] })).id)
      console.log(`seeding ${total.toLocaleString("en")} usage records over ${YEAR} (one INSERT per month, through the rollup trigger)...`)
      const yearMs = Date.UTC(YEAR + 1, 0, 1) - Date.UTC(YEAR, 0, 1)
      const seedStart = performance.now()
      for (let month = 0; month < 12; month++) {
        // Record g falls at g * yearMs / total ms into the year: the month's slice of g.
        const first = Math.ceil(((Date.UTC(YEAR, month, 1) - Date.UTC(YEAR, 0, 1)) * total) / yearMs)
        const last = Math.ceil(((Date.UTC(YEAR, month + 1, 1) - Date.UTC(YEAR, 0, 1)) * total) / yearMs) - 1
        const t = performance.now()
        await sqlOn((sql) =>
          sql.unsafe(`
            INSERT INTO usage_records (ref, account_id, at, key_id, agent_id, machine_id, service, model, unit, quantity,
                                       input_tokens, output_tokens, list_credits, credits, from_allowance, from_trial)
            SELECT 'bench_' || lpad(g::text, 9, '0'), ${literal(accountId)},
                   timestamptz '${YEAR}-01-01 00:00:00+00' + (g::bigint * ${yearMs} / ${total}) * interval '1 millisecond',
                   (${textArray(keyIds)})[1 + k],
                   CASE WHEN k >= 6 THEN 'agent_' || (k - 6) END,
                   'm-' || (g % 3), (${textArray(MODELS.map(([service]) => service))})[1 + m], (${textArray(MODELS.map(([, model]) => model))})[1 + m],
                   'tokens', inp + outp, inp, outp, (inp + outp) * 3,
                   CASE WHEN rf < 0.02 THEN 0 ELSE (inp + outp) * 3 END,
                   CASE WHEN rf < 0.02 THEN (inp + outp) * 3 ELSE 0 END, 0
            FROM (SELECT g, floor(power(random(), 2) * 10)::int AS k, floor(power(random(), 1.5) * 8)::int AS m,
                         random() AS rf, (20 + random() * 2000)::bigint AS inp, (random() * 800)::bigint AS outp
                  FROM generate_series(${first}, ${last}) AS g) AS s`))
        console.log(`  ${YEAR}-${String(month + 1).padStart(2, "0")}: ${(last - first + 1).toLocaleString("en")} records in ${((performance.now() - t) / 1000).toFixed(1)} s`)
      }
      await sqlOn((sql) => sql`ANALYZE`)
      console.log(`seeded in ${((performance.now() - seedStart) / 1000).toFixed(0)} s`)
    } else {
      console.log(`reusing ${existing.toLocaleString("en")} usage records`)
    }
    const sizes = (await sqlOn((sql) =>
      sql<{ records: string; rollups: string; records_size: string; rollups_size: string }>`
        SELECT (SELECT count(*) FROM usage_records)::text AS records, (SELECT count(*) FROM usage_rollups)::text AS rollups,
               pg_size_pretty(pg_total_relation_size('usage_records')) AS records_size,
               pg_size_pretty(pg_total_relation_size('usage_rollups')) AS rollups_size`
    ))[0]!
    console.log(`usage_records: ${Number(sizes.records).toLocaleString("en")} rows (${sizes.records_size}); usage_rollups: ${Number(sizes.rollups).toLocaleString("en")} rows (${sizes.rollups_size})`)

    if (has("explain")) {
      const plan = async (text: string) =>
        (await sqlOn((sql) => sql.unsafe<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`)))
          .map((r) => `    ${r["QUERY PLAN"]}`).join("\n")
      const account = literal(accountId)
      console.log(`report plan (year, by model):\n${await plan(
        `SELECT model, sum(calls), sum(list_credits), sum(credits), sum(from_allowance), sum(from_trial) FROM usage_rollups
         WHERE account_id = ${account} AND day >= '${YEAR}-01-01'::date AND day <= '${YEAR}-12-31'::date GROUP BY 1`
      )}`)
      console.log(`CSV page plan:\n${await plan(
        `SELECT * FROM usage_records WHERE account_id = ${account} AND at >= '${MONTH}-01T00:00:00.000Z'::timestamptz
         AND at < '${YEAR}-07-01T00:00:00.000Z'::timestamptz AND (at, ref COLLATE "C") > ('${MONTH}-10T00:00:00.000Z'::timestamptz, '' COLLATE "C")
         ORDER BY at, ref COLLATE "C" LIMIT 5000`
      )}`)
    }

    // ---- JSON reports ----
    const timeReport = async (query: string, path = "/billing/usage") => {
      const times: Array<number> = []
      let rows = 0
      for (let i = 0; i < 3 + runs; i++) {
        const t = performance.now()
        const response = await fetch(`${base}${path}?${query}`, { headers: auth })
        const body = await response.json() as { data?: Array<unknown>; usage_by_service?: Array<unknown> }
        if (response.status !== 200) throw new Error(`${path}?${query}: ${response.status} ${JSON.stringify(body)}`)
        if (i >= 3) times.push(performance.now() - t)
        rows = (body.data ?? body.usage_by_service ?? []).length
      }
      times.sort((a, b) => a - b)
      return { rows, min: times[0]!, p50: percentile(times, 0.5), p95: percentile(times, 0.95), max: times.at(-1)! }
    }
    console.log(`\nGET /billing/usage, ${runs} timed requests each (ms, client-side, keep-alive):`)
    console.log(`  range  group_by   rows     min     p50     p95     max`)
    const worst = { p95: 0, label: "" }
    for (const [label, query] of [["month", `month=${MONTH}`], ["year", `from=${YEAR}-01-01&to=${YEAR}-12-31`]] as const) {
      for (const groupBy of GROUP_BYS) {
        const r = await timeReport(`${query}&group_by=${groupBy}`)
        if (r.p95 > worst.p95) Object.assign(worst, { p95: r.p95, label: `${label} by ${groupBy}` })
        console.log(`  ${label.padEnd(6)} ${groupBy.padEnd(8)} ${String(r.rows).padStart(5)} ${ms(r.min)} ${ms(r.p50)} ${ms(r.p95)} ${ms(r.max)}`)
      }
    }
    // Statements read the credit totals, the day totals before the month and the month's rollups
    // by service (core/src/billing/Statements.ts): a month late in the year reads the most.
    for (const [label, path] of [["list", "/billing/statements"], ["2025-12", `/billing/statements/${YEAR}-12`], ["2025-06", `/billing/statements/${MONTH}`]] as const) {
      const r = await timeReport(label === "list" ? "" : "format=json", path)
      if (r.p95 > worst.p95) Object.assign(worst, { p95: r.p95, label: `statement ${label}` })
      console.log(`  stmt   ${label.padEnd(8)} ${String(r.rows).padStart(5)} ${ms(r.min)} ${ms(r.p50)} ${ms(r.p95)} ${ms(r.max)}`)
    }
    console.log(`  slowest p95: ${worst.p95.toFixed(1)} ms (${worst.label}); target: every report and statement under 100 ms`)

    // ---- CSV ----
    const serverCpu = () =>
      new Promise<number>((resolve) => {
        child!.once("message", (m: { cpuMs: number }) => resolve(m.cpuMs))
        child!.send("cpu")
      })
    const exportCsv = async (query: string) => {
      const cpu0 = await serverCpu()
      const canReset = resetPeak(pid)
      const before = procStatus(pid, "VmRSS")
      let sampledPeak = before ?? 0
      const sampler = setInterval(() => {
        sampledPeak = Math.max(sampledPeak, procStatus(pid, "VmRSS") ?? 0)
      }, 20)
      const t = performance.now()
      const response = await fetch(`${base}/billing/usage.csv?${query}`, { headers: auth })
      if (response.status !== 200) throw new Error(`${query}: ${response.status} ${await response.text()}`)
      let bytes = 0
      let lines = 0
      const reader = response.body!.getReader()
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        bytes += value.length
        for (let i = 0; i < value.length; i++) if (value[i] === 10) lines++
      }
      const seconds = (performance.now() - t) / 1000
      clearInterval(sampler)
      const peak = canReset ? procStatus(pid, "VmHWM") : undefined
      const rows = lines - 1
      const cpuMs = (await serverCpu()) - cpu0
      return { rows, seconds, bytes, cpuMs, before, peak: Math.max(peak ?? 0, sampledPeak), after: procStatus(pid, "VmRSS") }
    }
    console.log(`\nGET /billing/usage.csv (every record; server RSS before / peak during / after):`)
    for (const [label, query] of [["day", `from=${DAY}&to=${DAY}`], ["month", `month=${MONTH}`], ["month", `month=${MONTH}`], ["day", `from=${DAY}&to=${DAY}`]] as const) {
      const r = await exportCsv(query)
      console.log(
        `  ${label.padEnd(5)} ${r.rows.toLocaleString("en").padStart(9)} rows, ${(r.bytes / 1e6).toFixed(0).padStart(4)} MB in ${r.seconds.toFixed(2).padStart(6)} s: ` +
          `${Math.round(r.rows / r.seconds).toLocaleString("en").padStart(9)} rows/s (server CPU ${(r.cpuMs * 1000 / Math.max(1, r.rows)).toFixed(1)} µs/row); ` +
          `RSS ${mb(r.before)} / ${mb(r.peak)} / ${mb(r.after)}`
      )
    }
    console.log(`  target: >= 200,000 rows/s, peak RSS independent of the rows exported; load average now ${loadavg()}`)
  } finally {
    child?.send("stop")
    await new Promise((r) => setTimeout(r, 500))
    if (child !== undefined && child.exitCode === null) child.kill("SIGTERM")
    if (!keepDb) {
      for (let i = 0; i < 10; i++) {
        try {
          await withSql(serverUrl, (sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`))
          break
        } catch (error) {
          if (i === 9) console.error(`could not drop ${dbName}: ${String(error)}`)
          await new Promise((r) => setTimeout(r, 300))
        }
      }
    } else console.log(`kept database ${dbName} (rerun with --db ${dbName})`)
  }
}

const role = argv.find((a) => a.startsWith("--role="))?.slice("--role=".length)
if (role === "server") await runServer()
else await main()
