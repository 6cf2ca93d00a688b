/**
 * A stand-in for the `awslambda` global of Lambda's Node.js runtime, which exists only inside
 * Lambda (the idea of Hono's runtime-tests/lambda mocks, made closer to the runtime interface
 * client, aws-lambda-nodejs-runtime-interface-client src/stream):
 *
 * - `streamifyResponse(handler)` marks the handler as streaming and returns it;
 * - `HttpResponseStream.from(stream, metadata)` sets the stream's content type to Lambda's
 *   integration type and installs a hook that writes the JSON metadata and 8 NUL bytes just before
 *   the stream's first write (so, as on Lambda, nothing goes out before something is written);
 * - `FakeResponseStream` is the response stream the runtime hands the handler: a Writable that
 *   keeps every write with the time it was taken (optionally slowly, with a small buffer, to make
 *   backpressure visible), parses the prelude as the Function URL does, and can be aborted as a
 *   client disconnect aborts the runtime's request.
 */
import { Writable } from "node:stream"
import { vi } from "vitest"
import type { AwsLambdaGlobal, ResponseStream, StreamingHandler } from "../src/Streaming.ts"
import type { InvocationContext } from "../src/Handler.ts"
import type { APIGatewayProxyEventV2 } from "aws-lambda"

export const INTEGRATION_CONTENT_TYPE = "application/vnd.awslambda.http-integration-response"
const DELIMITER_LENGTH = 8

export interface Received {
  /** performance.now() when the stream took the write. */
  readonly at: number
  readonly bytes: Buffer
}

export interface Prelude {
  readonly statusCode: number
  readonly headers: Record<string, string>
  readonly cookies: ReadonlyArray<string>
}

type BeforeFirstWrite = (write: (chunk: string | Uint8Array) => void) => void

export class FakeResponseStream extends Writable {
  contentType = "application/octet-stream"
  /** Set by HttpResponseStream.from, run before the first write (as in the runtime). */
  _onBeforeFirstWrite: BeforeFirstWrite | undefined
  /** Every write the stream took, framing included, in order. */
  readonly received: Array<Received> = []
  private writeCalled = false
  private readonly writeDelayMs: number
  private readonly waiters: Array<() => void> = []

  constructor(options: { readonly highWaterMark?: number; readonly writeDelayMs?: number } = {}) {
    super({ highWaterMark: options.highWaterMark ?? 16_384 })
    this.writeDelayMs = options.writeDelayMs ?? 0
    const write = this.write.bind(this) as (chunk: unknown, ...rest: Array<unknown>) => boolean
    // As the runtime does: its write wraps the request's own and runs the hook first.
    this.write = ((chunk: unknown, ...rest: Array<unknown>): boolean => {
      if (!this.writeCalled && typeof this._onBeforeFirstWrite === "function") {
        this._onBeforeFirstWrite((framing) => write(framing))
      }
      this.writeCalled = true
      return write(chunk, ...rest)
    }) as Writable["write"]
  }

  setContentType(contentType: string): void {
    if (this.writeCalled) throw new Error("Cannot set content-type, too late.")
    this.contentType = contentType
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.received.push({ at: performance.now(), bytes: chunk })
    for (const waiter of this.waiters.splice(0)) waiter()
    if (this.writeDelayMs > 0) setTimeout(callback, this.writeDelayMs)
    else callback()
  }

  /** The client disconnects: the runtime's request to Lambda fails and is destroyed. */
  abort(): void {
    this.destroy(new Error("aborted: the client disconnected"))
  }

  /** The metadata prelude, once written: JSON then 8 NUL bytes, as HttpResponseStream.from frames it. */
  get prelude(): Prelude | undefined {
    if (this.contentType !== INTEGRATION_CONTENT_TYPE) return undefined
    const [json, delimiter] = this.received
    if (json === undefined || delimiter === undefined) return undefined
    if (delimiter.bytes.length !== DELIMITER_LENGTH || delimiter.bytes.some((byte) => byte !== 0)) {
      throw new Error("the prelude is not followed by 8 NUL bytes")
    }
    return JSON.parse(json.bytes.toString("utf8")) as Prelude
  }

  /** When the prelude was taken. */
  get preludeAt(): number | undefined {
    return this.prelude === undefined ? undefined : this.received[0]?.at
  }

  /** The body's writes after the prelude (empty writes left out), as the client gets them. */
  get chunks(): ReadonlyArray<Received> {
    return this.received.slice(this.contentType === INTEGRATION_CONTENT_TYPE ? 2 : 0).filter((r) => r.bytes.length > 0)
  }

  get text(): string {
    return Buffer.concat(this.chunks.map((chunk) => chunk.bytes)).toString("utf8")
  }

  /** Resolves once the body has `count` chunks. */
  async waitForChunks(count: number, timeoutMs = 5_000): Promise<void> {
    const deadline = performance.now() + timeoutMs
    while (this.chunks.length < count) {
      if (performance.now() > deadline) throw new Error(`only ${this.chunks.length} of ${count} chunks arrived`)
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve)
        setTimeout(resolve, 50)
      })
    }
  }
}

/** The same object Lambda's runtime installs as `globalThis.awslambda`. */
export const awslambdaShim: AwsLambdaGlobal & { readonly streamingHandlers: WeakSet<object> } = {
  streamingHandlers: new WeakSet<object>(),
  streamifyResponse: <H extends StreamingHandler>(handler: H): H => {
    awslambdaShim.streamingHandlers.add(handler)
    return handler
  },
  HttpResponseStream: {
    from: (stream: ResponseStream, metadata: Record<string, unknown>): ResponseStream => {
      const target = stream as unknown as FakeResponseStream
      target.setContentType(INTEGRATION_CONTENT_TYPE)
      const prelude = JSON.stringify(metadata)
      target._onBeforeFirstWrite = (write) => {
        write(prelude)
        write(new Uint8Array(DELIMITER_LENGTH))
      }
      return stream
    }
  }
}

/** Installs the shim as the global `awslambda` (vi.unstubAllGlobals removes it). */
export const installAwsLambdaShim = () => vi.stubGlobal("awslambda", awslambdaShim)

export interface StreamInvocation {
  readonly stream: FakeResponseStream
  /** The handler's promise; rejects like the runtime does if the stream was not finished by then. */
  readonly done: Promise<void>
}

/** Invokes a streaming handler as the runtime does: a fresh response stream, then the handler. */
export const invokeStreaming = (
  handler: StreamingHandler,
  event: APIGatewayProxyEventV2,
  context: InvocationContext = { getRemainingTimeInMillis: () => 30_000 },
  options: { readonly highWaterMark?: number; readonly writeDelayMs?: number } = {}
): StreamInvocation => {
  const stream = new FakeResponseStream(options)
  const done = handler(event, stream, context).then(() => {
    if (!stream.writableFinished && !stream.destroyed) throw new Error("Response stream is not finished.")
  })
  return { stream, done }
}
