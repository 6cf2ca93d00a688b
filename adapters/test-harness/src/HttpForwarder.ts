/**
 * A local HTTP address for a shell that a test reaches through `fetch` only (the Lambda handler,
 * the in-process web handler): every request to it is handed to that `fetch`, byte for byte, and
 * its answer written back. Lets an outside party (the fake Stripe posting webhooks) call any shell.
 */
import { createServer } from "node:http"
import type * as Net from "node:net"

export interface Forwarder {
  /** http://127.0.0.1:<port> */
  readonly url: string
  readonly close: () => Promise<void>
}

export const startForwarder = async (fetch: (path: string, init?: RequestInit) => Promise<Response>): Promise<Forwarder> => {
  const server = createServer((incoming, outgoing) => {
    const chunks: Array<Buffer> = []
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk))
    incoming.on("end", () => {
      const headers = new Headers()
      for (let i = 0; i < incoming.rawHeaders.length; i += 2) {
        const name = incoming.rawHeaders[i]!.toLowerCase()
        if (name !== "host" && name !== "connection" && name !== "content-length") headers.append(name, incoming.rawHeaders[i + 1]!)
      }
      const body = Buffer.concat(chunks)
      fetch(incoming.url ?? "/", { method: incoming.method ?? "GET", headers, ...(body.length === 0 ? {} : { body }) })
        .then(async (response) => {
          const text = Buffer.from(await response.arrayBuffer())
          outgoing.writeHead(response.status, { "content-type": response.headers.get("content-type") ?? "text/plain" })
          outgoing.end(text)
        })
        .catch((error: unknown) => {
          outgoing.writeHead(502)
          outgoing.end(String(error))
        })
    })
  })
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening))
  return {
    url: `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}`,
    close: () => new Promise<void>((closed) => server.close(() => closed()))
  }
}
