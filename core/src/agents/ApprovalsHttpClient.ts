/**
 * The AgentApprovals port (agents/AgentApprovals.ts) over HTTP with the web-standard `fetch`, so the
 * same code runs on Node and on Lambda: the platform calling its account service server to server
 * (the spec's "Account service"), authenticated with a service assertion when the platform has a
 * signing key (`signer`: a fresh ES256 JWT per call whose aud is the URL called; docs/agents.md
 * "Service assertions"), else with HTTP Basic as the platform's OAuth client.
 *
 *   POST {accountsUrl}/api/accounts/{sub}/agent-approvals          -> {id, approve_url}
 *   GET  {accountsUrl}/api/accounts/{sub}/agent-approvals/{id}     -> {state, ...}
 *
 * Requests are encoded and answers decoded with the wire schemas (ApprovalWire.ts). Anything else
 * — no connection, no answer within REQUEST_TIMEOUT_MS, a status other than 2xx, an answer that
 * is not the API's — is ApprovalsUnavailable with a reason that names the call and what went
 * wrong, never the client secret. Interrupting a call aborts its request.
 */
import { Clock, Effect, Layer, Schema } from "effect"
import { AgentApprovals, ApprovalsUnavailable } from "./AgentApprovals.ts"
import {
  ApprovalResultWire,
  type CreateApprovalWire,
  CreateApprovalWire as CreateApprovalSchema,
  CreatedApprovalWire
} from "./ApprovalWire.ts"
import { type ServiceSigner, sign } from "./ServiceAssertions.ts"

/** How long a call may take, from sending to the whole answer. */
export const REQUEST_TIMEOUT_MS = 10_000

export interface ApprovalsHttpSettings {
  /** The account service's base address (ACCOUNTS_URL), with or without a trailing slash. */
  readonly accountsUrl: string
  /** The platform's OAuth client id and secret at the account service. */
  readonly clientId: string
  readonly clientSecret: string
  /** Sign each call with a service assertion instead of Basic (the platform's key and name). */
  readonly signer?: ServiceSigner | undefined
  /** The fetch to use (tests); default the global one. */
  readonly fetch?: typeof globalThis.fetch | undefined
  /** Default REQUEST_TIMEOUT_MS. */
  readonly timeoutMs?: number | undefined
}

/** `Basic base64(id:secret)`, the id and secret as UTF-8. */
export const basicAuthorization = (clientId: string, clientSecret: string): string => {
  const bytes = new TextEncoder().encode(`${clientId}:${clientSecret}`)
  let binary = ""
  for (const b of bytes) binary += String.fromCharCode(b)
  return `Basic ${btoa(binary)}`
}

const describeError = (error: unknown): string => {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause
    return cause instanceof Error ? `${error.message}: ${cause.message}` : error.message
  }
  return String(error)
}

const encodeCreate = Schema.encodeUnknownSync(CreateApprovalSchema)
const decodeCreated = Schema.decodeUnknownEffect(CreatedApprovalWire)
const decodeResult = Schema.decodeUnknownEffect(ApprovalResultWire)

export const makeApprovalsHttp = (settings: ApprovalsHttpSettings): AgentApprovals["Service"] => {
  const base = settings.accountsUrl.replace(/\/+$/, "")
  const fetchImpl = settings.fetch ?? globalThis.fetch
  const timeoutMs = settings.timeoutMs ?? REQUEST_TIMEOUT_MS
  const basic = basicAuthorization(settings.clientId, settings.clientSecret)
  const signer = settings.signer
  /** Basic, or an assertion for this very URL (made per call: each is used once and lives 60 s). */
  const authorizationFor = (url: string): Effect.Effect<string> =>
    signer === undefined
      ? Effect.succeed(basic)
      : Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.map(sign(signer.keys, { iss: signer.iss, aud: url, now }), (token) => `Bearer ${token}`))
  const collection = (sub: string) => `${base}/api/accounts/${encodeURIComponent(sub)}/agent-approvals`

  /** One call: its JSON answer decoded with `decode`, or ApprovalsUnavailable naming `what`. */
  const call = <A>(
    what: string,
    url: string,
    init: RequestInit,
    decode: (json: unknown) => Effect.Effect<A, unknown>
  ): Effect.Effect<A, ApprovalsUnavailable> => {
    const unavailable = (reason: string) => new ApprovalsUnavailable({ reason: `${what}: ${reason}` })
    const exchange = Effect.gen(function*() {
      const authorization = yield* authorizationFor(url)
      const response = yield* Effect.tryPromise({
        try: (signal) =>
          fetchImpl(url, {
            ...init,
            headers: { ...init.headers as Record<string, string>, accept: "application/json", authorization },
            signal
          }),
        catch: (error) => unavailable(`no answer (${describeError(error)})`)
      })
      const text = yield* Effect.tryPromise({
        try: () => response.text(),
        catch: (error) => unavailable(`the answer broke off (${describeError(error)})`)
      })
      if (response.status < 200 || response.status >= 300) {
        return yield* unavailable(`answered ${response.status}${text.length > 0 ? ` ${text.slice(0, 200)}` : ""}`)
      }
      const json = yield* Effect.try({
        try: () => JSON.parse(text) as unknown,
        catch: () => unavailable(`answered ${response.status} with a body that is not JSON`)
      })
      return yield* decode(json).pipe(
        Effect.mapError((error) => unavailable(`the answer is not the API's (${describeError(error).slice(0, 300)})`))
      )
    })
    return exchange.pipe(
      Effect.timeoutOrElse({
        duration: timeoutMs,
        orElse: () => Effect.fail(unavailable(`no answer within ${timeoutMs} ms`))
      })
    )
  }

  return AgentApprovals.of({
    create: (sub: string, request: CreateApprovalWire) =>
      Effect.suspend(() =>
        call(
          `creating a ${request.kind} approval`,
          collection(sub),
          { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(encodeCreate(request)) },
          decodeCreated
        )
      ),
    read: (sub: string, approvalId: string) =>
      call(
        `reading approval ${approvalId}`,
        `${collection(sub)}/${encodeURIComponent(approvalId)}`,
        { method: "GET" },
        decodeResult
      )
  })
}

export const ApprovalsHttpClient = {
  /** AgentApprovals over HTTP at `accountsUrl`, as the platform (an assertion with a signer, else Basic). */
  layer: (settings: ApprovalsHttpSettings): Layer.Layer<AgentApprovals> =>
    Layer.succeed(AgentApprovals, makeApprovalsHttp(settings)),
} as const
