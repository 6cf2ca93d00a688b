/** Shared helpers of the reference machine's tests. */
import OpenAI from "openai"
import type { ReferenceMachine } from "../src/ReferenceMachine.ts"

export const client = (machine: ReferenceMachine, maxRetries = 0): OpenAI =>
  new OpenAI({ baseURL: machine.url, apiKey: "x", maxRetries })

/** POSTs JSON to a path of the machine's origin (e.g. "/v1/forecasts"); returns status and parsed body. */
export const post = async (
  machine: ReferenceMachine,
  path: string,
  body: unknown
): Promise<{ status: number; body: any; headers: Headers }> => {
  const res = await fetch(`${machine.origin}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body)
  })
  const text = await res.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // not JSON (e.g. an SSE stream): keep the text
  }
  return { status: res.status, body: parsed, headers: res.headers }
}

export const get = async (machine: ReferenceMachine, path: string): Promise<{ status: number; body: any }> => {
  const res = await fetch(`${machine.origin}${path}`)
  return { status: res.status, body: await res.json() }
}

/** Reads an SSE response into its `data:` payloads (strings, "[DONE]" included). */
export const sseEvents = (text: string): Array<string> =>
  text.split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => e.slice("data: ".length))
