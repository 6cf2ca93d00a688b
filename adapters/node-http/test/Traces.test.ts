/**
 * Traces over OTLP (docs/operations.md "Traces"), from the real server process (main.ts) to an
 * OTLP/HTTP receiver started here: one chat call sent with a client's `traceparent` gives, in that
 * trace, the server span of the request (route, status), the span of the inference call with
 * OpenTelemetry's GenAI attributes, and a client span for the attempt at the machine, whose
 * `traceparent` the machine received.
 */
import { startReferenceMachine, type ReferenceMachine } from "@model-platform/reference-machine/ReferenceMachine"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { gatewayCatalogue, MACHINE_MODELS } from "./gatewaySupport.ts"
import { type MainProcess, startMain } from "./mainProcess.ts"

interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
}

const SERVER = 2
const CLIENT = 3

const attr = (span: OtlpSpan, key: string): unknown => {
  const value = span.attributes.find((a) => a.key === key)?.value
  return value === undefined ? undefined : Object.values(value)[0]
}

/** A local OTLP/HTTP receiver: every span posted to /v1/traces. */
const startReceiver = async () => {
  const spans: Array<OtlpSpan> = []
  const server = http.createServer((req, res) => {
    let body = ""
    req.on("data", (chunk: Buffer) => (body += chunk.toString()))
    req.on("end", () => {
      if (req.url === "/v1/traces") {
        const payload = JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<OtlpSpan> }> }> }
        for (const resource of payload.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans)
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, close: () => server.close() }
}

/** A proxy in front of the machine that notes the traceparent of each request it forwards. */
const startRecordingProxy = async (target: string) => {
  const seen: Array<string | undefined> = []
  const upstream = new URL(target)
  const server = http.createServer((req, res) => {
    seen.push(req.headers["traceparent"] as string | undefined)
    const forward = http.request({ host: upstream.hostname, port: upstream.port, path: `${upstream.pathname.replace(/\/$/, "")}${req.url}`, method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(res)
    })
    req.pipe(forward)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, close: () => server.close() }
}

describe("OTLP traces from main.ts", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "platform-traces-"))
  let machine: ReferenceMachine
  let proxy: Awaited<ReturnType<typeof startRecordingProxy>>
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  let server: MainProcess
  beforeAll(async () => {
    machine = await startReferenceMachine({ port: 0, id: "m-a", models: MACHINE_MODELS })
    proxy = await startRecordingProxy(machine.url)
    receiver = await startReceiver()
    const catalogue = path.join(dir, "catalogue.json")
    // free-chat is priced at zero: the owner key may call it without credits.
    fs.writeFileSync(catalogue, JSON.stringify(gatewayCatalogue([{ id: "m-a", url: proxy.url, score: 1 }])))
    server = await startMain({
      DATA_DIR: path.join(dir, "data"),
      CATALOGUE_FILE: catalogue,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: "200",
      OTEL_SERVICE_NAME: "platform-under-test"
    })
  }, 90_000)
  afterAll(async () => {
    server?.kill()
    proxy?.close()
    receiver?.close()
    await machine?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("a chat call's spans reach the receiver in the client's trace, and its traceparent reaches the machine", async () => {
    const secret = /mpk_[A-Za-z0-9_-]{43}/.exec(server.output())![0]
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
    const clientSpanId = "00f067aa0ba902b7"
    const response = await fetch(`${server.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json", traceparent: `00-${traceId}-${clientSpanId}-01` },
      body: JSON.stringify({ model: "free-chat", messages: [{ role: "user", content: "hello" }] })
    })
    expect(response.status, await response.clone().text()).toBe(200)
    await response.text()

    const ofTrace = () => receiver.spans.filter((s) => s.traceId === traceId)
    for (let i = 0; i < 100 && !ofTrace().some((s) => s.kind === SERVER); i++) await new Promise((r) => setTimeout(r, 100))
    const spans = ofTrace()

    const request = spans.find((s) => s.kind === SERVER)
    expect(request, JSON.stringify(spans.map((s) => s.name))).toBeDefined()
    expect(request!.parentSpanId).toBe(clientSpanId)
    expect(attr(request!, "http.route")).toBe("/v1/chat/completions")
    expect(Number(attr(request!, "http.response.status_code"))).toBe(200)

    const inference = spans.find((s) => attr(s, "gen_ai.operation.name") === "chat")
    expect(inference).toMatchObject({ name: "chat" })
    expect(attr(inference!, "gen_ai.request.model")).toBe("free-chat")
    expect(attr(inference!, "model_platform.machine")).toBe("m-a")

    const attempt = spans.find((s) => s.kind === CLIENT && s.name === "POST /chat/completions")
    expect(attempt).toMatchObject({ parentSpanId: inference!.spanId })
    expect(attr(attempt!, "model_platform.machine")).toBe("m-a")
    expect(Number(attr(attempt!, "http.response.status_code"))).toBe(200)

    // The machine got the attempt's context: the same trace, the client span as parent.
    expect(proxy.seen).toContain(`00-${traceId}-${attempt!.spanId}-01`)
    // No secret in any span.
    expect(JSON.stringify(receiver.spans)).not.toContain(secret)
  }, 60_000)
})
