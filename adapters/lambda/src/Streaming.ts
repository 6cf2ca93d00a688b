/**
 * Lambda response streaming (Function URLs with invoke mode RESPONSE_STREAM): the platform's web
 * `Response` written on the response stream Lambda hands a `streamifyResponse` handler, as it is
 * produced. This is what lets a chat completion stream (SSE) reach the client token by token;
 * API Gateway buffers every response (docs/lambda.md, "Streaming").
 *
 * - Status, headers and cookies go first, as the metadata prelude of
 *   `awslambda.HttpResponseStream.from(stream, { statusCode, headers, cookies })`. Lambda writes
 *   that prelude just before the first body write, so an empty write follows at once: the client
 *   gets the status and headers even while the body has not produced anything yet.
 * - The body is read chunk by chunk and each chunk is written as soon as it is read, never
 *   gathered. When the stream asks to wait (`write` returns false) the next chunk is read only
 *   after `drain`, so a slow client holds the producer back instead of filling memory.
 * - A client that goes away shows as the response stream failing or closing before it finished:
 *   the body is cancelled then, which reaches the producer (the platform's web handler interrupts
 *   the request's fiber), and the handler returns.
 * - A body that fails half way (the invocation's deadline, a defect) ends the stream where it is:
 *   status and headers are gone already, so the client sees a cut-short body.
 *
 * `awslambda` is a global of Lambda's Node.js runtime only; tests shim it (test/awslambdaShim.ts).
 */
import type { APIGatewayProxyEventV2 } from "aws-lambda"
import type { Writable } from "node:stream"
import type { InvocationContext } from "./Handler.ts"

/** What a streaming handler's prelude carries (API Gateway payload 2.0 shaped, as Lambda wants it). */
export interface StreamMetadata {
  readonly statusCode: number
  readonly headers: Record<string, string>
  readonly cookies: ReadonlyArray<string>
}

/**
 * The parts of Lambda's response stream used here. The runtime hands a wrapper around its HTTP
 * request to the Runtime API that offers these methods and properties, not a full `Writable`.
 */
export type ResponseStream = Pick<
  Writable,
  "write" | "end" | "on" | "once" | "off" | "destroyed" | "writableFinished" | "writableEnded"
>

/** The global the Lambda Node.js runtime installs (only the members used here). */
export interface AwsLambdaGlobal {
  readonly streamifyResponse: <H extends StreamingHandler>(handler: H) => H
  readonly HttpResponseStream: {
    readonly from: (stream: ResponseStream, metadata: Record<string, unknown>) => ResponseStream
  }
}

export type StreamingHandler = (
  event: APIGatewayProxyEventV2,
  responseStream: ResponseStream,
  context?: InvocationContext
) => Promise<void>

/** How writing a response ended. */
export type StreamOutcome =
  /** every byte of the body was written and the stream ended */
  | "completed"
  /** the client went away (the stream failed or closed early): the body was cancelled */
  | "client-gone"
  /** the body failed half way: the stream was ended where it was */
  | "body-failed"

/**
 * The runtime's global, read when used, not at import (the runtime, or a test's shim, installs it
 * before). The AWS SDK itself sets `globalThis.awslambda` to an empty object outside Lambda
 * (@aws/lambda-invoke-store), so its members are what tell.
 */
const lambdaGlobal = (): AwsLambdaGlobal | undefined => {
  const lambda = (globalThis as unknown as { readonly awslambda?: Partial<AwsLambdaGlobal> }).awslambda
  return typeof lambda?.streamifyResponse === "function" && typeof lambda.HttpResponseStream?.from === "function"
    ? lambda as AwsLambdaGlobal
    : undefined
}

/**
 * Marks a handler as streaming with Lambda's `awslambda.streamifyResponse`. Outside Lambda (a
 * module loaded by a script or a test without the shim) the handler is returned as it is, so that
 * importing the entry point does not fail there.
 */
export const streamifyResponse = <H extends StreamingHandler>(handler: H): H => {
  const lambda = lambdaGlobal()
  return lambda === undefined ? handler : lambda.streamifyResponse(handler)
}

/**
 * Headers the stream's own framing decides (the Function URL answers in chunks): the length of a
 * streamed body is not known in advance, Set-Cookie travels in `cookies`, and the connection is
 * the Function URL's (a 413's `Connection: close` is for the Node server's socket).
 */
const METADATA_OMITS = new Set(["set-cookie", "content-length", "transfer-encoding", "connection"])

/** Status, headers (repeated ones joined with ", ") and every Set-Cookie of a web Response. */
export const responseMetadata = (response: Response): StreamMetadata => {
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => {
    if (!METADATA_OMITS.has(name)) headers[name] = value
  })
  return { statusCode: response.status, headers, cookies: response.headers.getSetCookie() }
}

const EMPTY = new Uint8Array(0)

/**
 * Writes a web Response on Lambda's response stream: the prelude (status, headers, cookies), then
 * the body chunk by chunk as it is produced, then the end of the stream. Resolves when the
 * stream is done with, and never rejects for a client gone or a body failed half way.
 */
export const writeResponse = async (response: Response, responseStream: ResponseStream): Promise<StreamOutcome> => {
  const lambda = lambdaGlobal()
  if (lambda === undefined) {
    throw new Error("awslambda.HttpResponseStream exists only inside Lambda's Node.js runtime (tests shim it)")
  }
  const metadata = responseMetadata(response)
  const stream = lambda.HttpResponseStream.from(responseStream, { ...metadata, cookies: [...metadata.cookies] })

  // The client is gone when the stream fails or closes before it finished. Then the body is
  // cancelled (a pending read ends at once) and whatever the loop waits for is woken up.
  let gone = false
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined
  let wake: (() => void) | undefined
  const onGone = () => {
    if (gone) return
    gone = true
    reader?.cancel(new Error("the client went away")).catch(() => undefined)
    wake?.()
  }
  // These listeners stay: an 'error' without a listener would crash the process.
  stream.on("error", onGone)
  stream.on("close", () => {
    if (!stream.writableFinished) onGone()
  })
  if (stream.destroyed && !stream.writableFinished) onGone()

  const waitFor = (event: "drain" | "finish", start?: () => void) =>
    new Promise<void>((resolve) => {
      wake = resolve
      stream.once(event, () => resolve())
      start?.()
    }).finally(() => {
      wake = undefined
    })
  const end = async () => {
    if (!gone && !stream.writableFinished) await waitFor("finish", () => stream.end())
  }

  // The prelude goes out with the first write: send it now, before the body produces anything.
  stream.write(EMPTY)

  if (response.body !== null) {
    if (gone) {
      await response.body.cancel(new Error("the client went away")).catch(() => undefined)
      return "client-gone"
    }
    const body = response.body.getReader()
    reader = body
    try {
      for (;;) {
        const next = await body.read()
        if (gone) return "client-gone"
        if (next.done) break
        if (next.value.byteLength === 0) continue
        if (!stream.write(next.value)) {
          await waitFor("drain")
          if (gone) return "client-gone"
        }
      }
    } catch (error) {
      if (gone) return "client-gone"
      console.error("The response body failed while streaming; the stream ends here", error)
      await body.cancel(error).catch(() => undefined)
      await end()
      return "body-failed"
    }
  }
  await end()
  return gone ? "client-gone" : "completed"
}

/**
 * A streaming handler for Function URL events: `respond` answers the event with a web Response
 * (the platform's `LambdaHandler.respond`), which is written on the response stream as it is
 * produced. Wrap it with `streamifyResponse` in the entry point.
 */
export const makeStreamHandler = (
  respond: (event: APIGatewayProxyEventV2, context?: InvocationContext) => Promise<Response>
): StreamingHandler =>
async (event, responseStream, context) => {
  const response = await respond(event, context)
  await writeResponse(response, responseStream)
}
