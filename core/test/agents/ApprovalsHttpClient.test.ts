/**
 * AgentApprovals over HTTP (core/src/agents/ApprovalsHttpClient.ts) against a fake `fetch`: the
 * requests it sends (paths, HTTP Basic as the platform's client, the body), the answers it decodes,
 * and every other outcome (no connection, a timeout, a non-2xx, a body that is not the API's)
 * ApprovalsUnavailable with a reason that never carries the client secret.
 */
import { describe, expect, it } from "@effect/vitest"
import { basicAuthorization, makeApprovalsHttp } from "../../src/agents/ApprovalsHttpClient.ts"
import { Effect } from "effect"

const SECRET = "s3cr3t-client-secret"

interface Sent {
  readonly url: string
  readonly method: string
  readonly headers: Record<string, string>
  readonly body: string | undefined
}

const fakeFetch = (answer: (sent: Sent, signal: AbortSignal | undefined) => Promise<Response>) => {
  const sent: Array<Sent> = []
  const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const s: Sent = {
      url: String(input),
      method: init?.method ?? "GET",
      headers: init?.headers as Record<string, string>,
      body: init?.body as string | undefined
    }
    sent.push(s)
    return answer(s, init?.signal ?? undefined)
  }) as typeof globalThis.fetch
  return { fetch, sent }
}

const json = (status: number, body: unknown) =>
  Promise.resolve(new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } }))

const client = (fetch: typeof globalThis.fetch, timeoutMs?: number) =>
  makeApprovalsHttp({ accountsUrl: "https://accounts.test/", clientId: "platform", clientSecret: SECRET, fetch, timeoutMs })

const failureOf = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.runPromise(Effect.flip(effect)) as Promise<E & { readonly _tag: string; readonly reason: string }>

describe("ApprovalsHttpClient", () => {
  it("POSTs a create to {accounts_url}/api/accounts/{sub}/agent-approvals with Basic auth and decodes {id, approve_url}", async () => {
    const { fetch, sent } = fakeFetch(() => json(201, { id: "apr_1", approve_url: "https://accounts.test/approve/apr_1" }))
    const request = {
      kind: "create" as const,
      settings: {
        agent_name: "bot",
        capabilities: ["inference" as const],
        max_transaction_token: "0.5",
        max_daily_token: "",
        daily_limit_credits: 10,
        total_limit_credits: null,
        expires_in_days: 30
      },
      serving_nodes: [{ machine_did: "did:svc:node:a", operator_did: "did:svc:operator:a" }],
      return_to: "https://platform.test/agents/agt_1"
    }
    const created = await Effect.runPromise(client(fetch).create("per_1/x", request))
    expect(created).toEqual({ id: "apr_1", approve_url: "https://accounts.test/approve/apr_1" })
    expect(sent).toHaveLength(1)
    expect(sent[0]!.url).toBe("https://accounts.test/api/accounts/per_1%2Fx/agent-approvals")
    expect(sent[0]!.method).toBe("POST")
    expect(sent[0]!.headers.authorization).toBe(`Basic ${btoa(`platform:${SECRET}`)}`)
    expect(sent[0]!.headers["content-type"]).toBe("application/json")
    expect(JSON.parse(sent[0]!.body!)).toEqual(request)
  })

  it("GETs an approval and decodes each state", async () => {
    const approved = {
      state: "approved",
      kind: "create",
      agent_did: "did:svc:machine:per_1:agt_1",
      network: {
        identity: { did: "did:svc:machine:per_1:agt_1", controller_did: "did:svc:human:per_1" },
        wallet: { address: "0xabc" },
        serving_nodes: [{ machine_did: "did:svc:node:a", operator_did: "did:svc:operator:a", dpop_jkt: "jkt" }],
        api_key: "netkey"
      },
      settings: {
        agent_name: "bot",
        capabilities: ["inference"],
        max_transaction_value: "500000000000000000",
        max_daily_spend: null,
        expires_in_days: 30,
        daily_limit_credits: 10,
        total_limit_credits: null
      }
    }
    for (const answer of [{ state: "pending" }, { state: "expired" }, { state: "failed", error: "refused" }, { state: "collected", agent_did: "did:svc:machine:a:b" }, approved]) {
      const { fetch, sent } = fakeFetch(() => json(200, answer))
      expect(await Effect.runPromise(client(fetch).read("per_1", "apr 1"))).toEqual(answer)
      expect(sent[0]!.url).toBe("https://accounts.test/api/accounts/per_1/agent-approvals/apr%201")
      expect(sent[0]!.method).toBe("GET")
      expect(sent[0]!.headers.authorization).toBe(basicAuthorization("platform", SECRET))
    }
  })

  it("a non-2xx answer, a body that is not JSON or not the API's, no connection: ApprovalsUnavailable, never the secret", async () => {
    const cases: ReadonlyArray<[string, () => Promise<Response>]> = [
      ["answered 401", () => json(401, { error: "bad client" })],
      ["answered 500", () => Promise.resolve(new Response("", { status: 500 }))],
      ["not JSON", () => Promise.resolve(new Response("<html>", { status: 200 }))],
      ["not the API's", () => json(200, { state: "approved" })],
      ["no answer", () => Promise.reject(new TypeError("fetch failed", { cause: new Error("ECONNREFUSED") }))]
    ]
    for (const [expected, answer] of cases) {
      const { fetch } = fakeFetch(answer)
      const failure = await failureOf(client(fetch).read("per_1", "apr_1"))
      expect(failure._tag).toBe("ApprovalsUnavailable")
      expect(failure.reason).toContain(expected)
      expect(failure.reason).toContain("apr_1")
      expect(failure.reason).not.toContain(SECRET)
      expect(failure.reason).not.toContain(btoa(`platform:${SECRET}`))
    }
    const { fetch } = fakeFetch(() => json(200, { id: 1 }))
    const failure = await failureOf(client(fetch).create("per_1", { kind: "revoke", agent_did: "did:svc:machine:a:b" }))
    expect(failure._tag).toBe("ApprovalsUnavailable")
    expect(failure.reason).toContain("creating a revoke approval")
  })

  it("no answer within the timeout: ApprovalsUnavailable, the request aborted", async () => {
    let aborted = false
    const { fetch } = fakeFetch((_, signal) =>
      new Promise((_, reject) => {
        signal?.addEventListener("abort", () => {
          aborted = true
          reject(new Error("aborted"))
        })
      })
    )
    const failure = await failureOf(client(fetch, 50).read("per_1", "apr_1"))
    expect(failure._tag).toBe("ApprovalsUnavailable")
    expect(failure.reason).toContain("within 50 ms")
    expect(aborted).toBe(true)
  })
})
