/**
 * A fake of SSM Parameter Store's GetParameter, on a local HTTP port, for the entry point's tests
 * and the cold start script. It speaks the AWS JSON 1.1 protocol the SDK's SSMClient uses
 * (`POST /`, `X-Amz-Target: AmazonSSM.GetParameter`), so the real client reaches it through the
 * SDK's own endpoint setting (`AWS_ENDPOINT_URL_SSM`) and the entry point needs no test hook.
 * Signatures are not checked. A SecureString is "decrypted" only when WithDecryption is true, as
 * SSM does; otherwise the fake answers a placeholder ciphertext.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"

export type ParameterType = "String" | "SecureString"

export interface FakeParameter {
  readonly type: ParameterType
  readonly value: string
}

export interface FakeSsm {
  /** http://127.0.0.1:<port> */
  readonly endpoint: string
  /** Every GetParameter call, in order. */
  readonly calls: ReadonlyArray<{ readonly name: string; readonly withDecryption: boolean }>
  readonly set: (name: string, parameter: FakeParameter) => void
  readonly delete: (name: string) => void
  readonly close: () => Promise<void>
}

const json = (response: http.ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body)
  response.writeHead(status, {
    "content-type": "application/x-amz-json-1.1",
    "content-length": Buffer.byteLength(text),
    "x-amzn-requestid": crypto.randomUUID()
  })
  response.end(text)
}

const error = (response: http.ServerResponse, status: number, type: string, message: string) =>
  json(response, status, { __type: type, message })

export const startFakeSsm = async (initial: Readonly<Record<string, FakeParameter>> = {}): Promise<FakeSsm> => {
  const parameters = new Map(Object.entries(initial))
  const calls: Array<{ name: string; withDecryption: boolean }> = []
  const server = http.createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const target = request.headers["x-amz-target"]
      if (request.method !== "POST" || target !== "AmazonSSM.GetParameter") {
        return error(response, 400, "UnknownOperationException", `the fake SSM answers GetParameter only, not ${String(target)}`)
      }
      let input: { Name?: unknown; WithDecryption?: unknown }
      try {
        input = JSON.parse(Buffer.concat(chunks).toString("utf8")) as typeof input
      } catch {
        return error(response, 400, "SerializationException", "the body is not JSON")
      }
      const name = String(input.Name)
      const withDecryption = input.WithDecryption === true
      calls.push({ name, withDecryption })
      const parameter = parameters.get(name)
      if (parameter === undefined) return error(response, 400, "ParameterNotFound", `Parameter ${name} not found.`)
      const value = parameter.type === "SecureString" && !withDecryption
        ? Buffer.from(`encrypted:${crypto.randomUUID()}`).toString("base64")
        : parameter.value
      json(response, 200, {
        Parameter: {
          ARN: `arn:aws:ssm:local:000000000000:parameter${name.startsWith("/") ? "" : "/"}${name}`,
          DataType: "text",
          LastModifiedDate: Date.now() / 1000,
          Name: name,
          Type: parameter.type,
          Value: value,
          Version: 1
        }
      })
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => resolve())
  })
  const { port } = server.address() as AddressInfo
  return {
    endpoint: `http://127.0.0.1:${port}`,
    calls,
    set: (name, parameter) => {
      parameters.set(name, parameter)
    },
    delete: (name) => {
      parameters.delete(name)
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
