/**
 * deploy/observability (docs/operations.md "Alerts", "Dashboard"): every metric the alert rules
 * and the Grafana dashboard query is one the server exposes on GET /metrics, and every label they
 * select or group by is one that metric carries (core observability/Metrics.ts METRIC_LABELS,
 * itself held to what the exposition shows). A renamed metric breaks this test, not a dashboard
 * in production.
 */
import { startReferenceMachine, type ReferenceMachine } from "@model-platform/reference-machine/ReferenceMachine"
import { METRIC_LABELS } from "@model-platform/core/observability"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { type Exposition, parseExposition } from "@model-platform/test-harness/Prometheus"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { gatewayCatalogue, MACHINE_MODELS } from "./gatewaySupport.ts"
import { startNodeServer } from "./support.ts"

const DIR = path.join(import.meta.dirname, "..", "..", "..", "deploy", "observability")

/** The `expr` of every rule in a Prometheus rule file (block scalars `expr: |` and one-line ones). */
export const ruleExpressions = (yaml: string): ReadonlyArray<string> => {
  const lines = yaml.split("\n")
  const out: Array<string> = []
  for (let i = 0; i < lines.length; i++) {
    const match = /^(\s*)expr:\s*(.*)$/.exec(lines[i]!)
    if (match === null) continue
    if (match[2] !== "|" && match[2] !== ">") {
      out.push(match[2]!)
      continue
    }
    const indent = match[1]!.length
    const block: Array<string> = []
    while (i + 1 < lines.length && (lines[i + 1]!.trim() === "" || lines[i + 1]!.search(/\S/) > indent)) block.push(lines[++i]!.trim())
    out.push(block.join(" "))
  }
  return out
}

const PROMQL_WORDS = new Set(["by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset", "le"])

/** The metrics a PromQL expression selects, and the labels it matches on or groups by. */
export const queried = (expr: string): { readonly metrics: ReadonlyArray<string>; readonly labels: ReadonlyArray<string> } => {
  const labels: Array<string> = []
  let rest = expr.replace(/"(?:[^"\\]|\\.)*"/g, "\"\"")
  rest = rest.replace(/\{([^}]*)\}/g, (_, matchers: string) => {
    for (const m of matchers.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)) labels.push(m[1]!)
    return " "
  })
  rest = rest.replace(/\b(?:by|without)\s*\(([^)]*)\)/g, (_, names: string) => {
    for (const name of names.split(",").map((n) => n.trim()).filter((n) => n !== "")) labels.push(name)
    return " "
  })
  rest = rest.replace(/\[[^\]]*\]/g, " ")
  const metrics = [...rest.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(\s*\()?/g)]
    .filter((m) => m[2] === undefined && !PROMQL_WORDS.has(m[1]!) && !/^\d/.test(m[1]!))
    .map((m) => m[1]!)
  return { metrics, labels: labels.filter((l) => l !== "le") }
}

const familyOf = (name: string) =>
  name in METRIC_LABELS ? name : name.replace(/_(bucket|sum|count)$/, "")

describe("deploy/observability queries only what GET /metrics exposes", () => {
  let machine: ReferenceMachine
  let platform: Awaited<ReturnType<typeof startNodeServer>>
  let exposition: Exposition
  beforeAll(async () => {
    machine = await startReferenceMachine({ port: 0, id: "m-a", models: MACHINE_MODELS })
    platform = await startNodeServer(gatewayCatalogue([{ id: "m-a", url: machine.url, score: 1 }]), MemoryPlatformStores)
    const call = (model: string) =>
      platform.fetch("/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${platform.ownerSecret}`, "content-type": "application/json" },
        body: JSON.stringify({ model, stream: true, messages: [{ role: "user", content: "hello" }] })
      }).then((r) => r.text())
    // One call that answers (a free model: the owner has no credits), one that fails (402).
    await call("free-chat")
    await call("ref-chat")
    for (let i = 0; i < 50; i++) {
      exposition = parseExposition(await (await platform.fetch("/metrics")).text())
      if (exposition.find("gen_ai_client_token_usage_count").length > 0) break
      await new Promise((r) => setTimeout(r, 50))
    }
  }, 60_000)
  afterAll(async () => {
    await platform?.close()
    await machine?.close()
  })

  const sources = () => {
    const alerts = ruleExpressions(fs.readFileSync(path.join(DIR, "alerts.yml"), "utf8")).map((expr) => ({ where: "alerts.yml", expr }))
    const dashboard = JSON.parse(fs.readFileSync(path.join(DIR, "grafana-dashboard.json"), "utf8")) as {
      panels: Array<{ title: string; targets: Array<{ expr: string }> }>
    }
    const panels = dashboard.panels.flatMap((p) => p.targets.map((t) => ({ where: `dashboard "${p.title}"`, expr: t.expr })))
    return [...alerts, ...panels]
  }

  it("the files have the alerts and panels the issue asks for", () => {
    const alerts = fs.readFileSync(path.join(DIR, "alerts.yml"), "utf8")
    for (const alert of ["PlatformServerErrors", "InferenceErrors", "SlowTimeToFirstToken", "MeteringBacklog", "StoreUnavailable", "MachinesCoolingDown", "HeldCreditsGrowing"]) {
      expect(alerts).toContain(`alert: ${alert}`)
    }
    expect(sources().length).toBeGreaterThan(20)
  })

  it("every metric queried is exposed, and every label queried is one it carries", () => {
    const problems: Array<string> = []
    for (const { where, expr } of sources()) {
      const { metrics, labels } = queried(expr)
      if (metrics.length === 0) problems.push(`${where}: no metric in ${expr}`)
      for (const metric of metrics) {
        const family = familyOf(metric)
        if (!(family in METRIC_LABELS)) problems.push(`${where}: ${metric} is no metric of the platform`)
        else if (exposition.find(metric).length === 0) problems.push(`${where}: ${metric} is not in GET /metrics`)
        for (const label of labels) {
          if (metrics.every((m) => !(METRIC_LABELS[familyOf(m)] ?? []).includes(label))) {
            problems.push(`${where}: no metric of ${metrics.join(", ")} has the label ${label}`)
          }
        }
      }
    }
    expect(problems).toEqual([])
  })

  it("the labels each metric is declared with are the ones GET /metrics shows", () => {
    for (const sample of exposition.samples) {
      const declared = METRIC_LABELS[familyOf(sample.name)]
      expect(declared, sample.name).toBeDefined()
      for (const label of Object.keys(sample.labels).filter((l) => l !== "le")) expect(declared, `${sample.name} ${label}`).toContain(label)
    }
  })

  it("the expression reader finds what a query selects (a typo in a metric name would be caught)", () => {
    expect(queried("sum by (le, gen_ai_request_model) (rate(gen_ai_server_time_to_first_token_seconds_bucket[10m]))")).toEqual({
      metrics: ["gen_ai_server_time_to_first_token_seconds_bucket"],
      labels: ["gen_ai_request_model"]
    })
    expect(queried(`sum(rate(http_server_request_duration_seconds_count{http_response_status_code=~"5.."}[5m])) / sum(rate(http_requests_total[5m]))`))
      .toEqual({ metrics: ["http_server_request_duration_seconds_count", "http_requests_total"], labels: ["http_response_status_code"] })
  })
})
