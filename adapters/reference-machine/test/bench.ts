/**
 * A benchmark of the reference machine (not a test): the chat model's CPU per call in process,
 * then HTTP round trips against a machine in a child process at concurrency 1 and 16 (p50, p99,
 * requests per second, the machine's CPU per request).
 *
 *   ./platform node adapters/reference-machine/test/bench.ts [requests per run, default 5000]
 */
import { spawn } from "node:child_process"
import * as Http from "node:http"
import { fileURLToPath } from "node:url"
import { parseChatRequest, runChat } from "../src/ChatModel.ts"

const N = Number(process.argv[2] ?? 5000)
const PORT = 18000 + Math.floor(Math.random() * 1000)
const chat = JSON.stringify({
  model: "ref-chat",
  messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Say hello to the benchmark." }],
  max_tokens: 64
})
const stream = JSON.stringify({ ...JSON.parse(chat), stream: true, stream_options: { include_usage: true } })
const embed = JSON.stringify({ model: "ref-embed", input: "The quick brown fox jumps over the lazy dog", encoding_format: "base64" })
const forecast = JSON.stringify({ model: "ref-forecast", history: Array.from({ length: 512 }, (_, i) => Math.sin(i / 7) * 10 + i), horizon: 64 })

// 1. The model alone, in this process.
for (let i = 0; i < 5000; i++) JSON.stringify(runChat(parseChatRequest(JSON.parse(chat), "ref-chat")))
const cpu0 = process.cpuUsage()
const M = 50_000
for (let i = 0; i < M; i++) JSON.stringify(runChat(parseChatRequest(JSON.parse(chat), "ref-chat")))
const cpu1 = process.cpuUsage(cpu0)
console.log(`chat model in process: ${((cpu1.user + cpu1.system) / M).toFixed(2)} µs CPU per call (parse + run + serialise)`)

// 2. Over HTTP, against a child process.
const child = spawn(process.execPath, [fileURLToPath(new URL("../src/main.ts", import.meta.url))], {
  env: { ...process.env, REFERENCE_MACHINE_PORT: String(PORT), REFERENCE_MACHINE_FAULTS: "1" },
  stdio: ["ignore", "pipe", "inherit"]
})
await new Promise<void>((resolve) => child.stdout!.once("data", () => resolve()))
const agent = new Http.Agent({ keepAlive: true, maxSockets: 64 })

const request = (path: string, body?: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const req = Http.request(
      { host: "127.0.0.1", port: PORT, path, method: body === undefined ? "GET" : "POST", agent, headers: { "content-type": "application/json" } },
      (res) => {
        let text = ""
        res.setEncoding("utf8")
        res.on("data", (c: string) => (text += c))
        res.on("end", () => (res.statusCode === 200 ? resolve(text) : reject(new Error(`${res.statusCode} ${text}`))))
      }
    )
    req.on("error", reject)
    req.end(body)
  })

const cpuOfMachine = async (): Promise<number> => {
  const c = JSON.parse(await request("/_control")).process
  return c.cpu_user_us + c.cpu_system_us
}

const percentile = (sorted: Array<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!

const run = async (label: string, path: string, body: string, concurrency: number, n: number) => {
  for (let i = 0; i < 500; i++) await request(path, body) // warm up
  const lat: Array<number> = []
  const cpuBefore = await cpuOfMachine()
  const t0 = performance.now()
  let next = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next++ < n) {
      const s = performance.now()
      await request(path, body)
      lat.push(performance.now() - s)
    }
  }))
  const elapsed = performance.now() - t0
  const cpu = (await cpuOfMachine()) - cpuBefore
  lat.sort((a, b) => a - b)
  console.log(
    `${label.padEnd(22)} c=${String(concurrency).padEnd(3)} p50 ${percentile(lat, 0.5).toFixed(3)} ms  p99 ${
      percentile(lat, 0.99).toFixed(3)
    } ms  ${Math.round(n / (elapsed / 1000))} req/s  machine CPU ${(cpu / n).toFixed(1)} µs/req`
  )
}

try {
  await run("GET /health", "/health", undefined as unknown as string, 1, N)
  for (const c of [1, 16]) {
    await run("chat", "/v1/chat/completions", chat, c, N)
    await run("chat stream (usage)", "/v1/chat/completions", stream, c, N)
    await run("embeddings 1024 base64", "/v1/embeddings", embed, c, N)
  }
  await run("forecast 512 -> 64", "/v1/forecasts", forecast, 1, Math.min(N, 1000))
} finally {
  agent.destroy()
  child.kill("SIGTERM")
}
