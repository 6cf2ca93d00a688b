/**
 * The accounts the isolation matrix (IsolationMatrix.ts) works on: a client over a shell, an
 * account's "world" built through the API as a customer would (keys, orders, payments, gift
 * tickets, receipts, usage through /v1), and snapshots of an account's state read back through
 * its GET endpoints.
 */
import { encodeWav } from "@model-platform/core/fieldwork"
import { sha256, toHex } from "@model-platform/core/kernel"
import { expect } from "vitest"
import type { ShellUnderTest } from "./HttpSuite.ts"

export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly json: any
}

export interface Request {
  readonly key?: string
  /** Sent as JSON. */
  readonly body?: unknown
  /** Sent as they are (an audio take, a file), with the content type the headers give. */
  readonly raw?: Uint8Array
  readonly headers?: Record<string, string>
}

export interface Client {
  readonly shell: ShellUnderTest
  readonly call: (method: string, path: string, request?: Request) => Promise<Answer>
  /** As `call`, and the answer must be a 200. */
  readonly ok: (method: string, path: string, request: Request & { readonly key: string }) => Promise<Answer>
}

export const clientOf = (shell: ShellUnderTest): Client => {
  const call = async (method: string, path: string, request: Request = {}): Promise<Answer> => {
    const headers: Record<string, string> = { ...request.headers }
    if (request.key !== undefined) headers.authorization = `Bearer ${request.key}`
    if (request.body !== undefined) headers["content-type"] = "application/json"
    const response = await shell.fetch(path, {
      method,
      headers,
      ...(request.body !== undefined
        ? { body: JSON.stringify(request.body) }
        : request.raw !== undefined
        ? { body: request.raw as unknown as BodyInit }
        : {})
    })
    const text = await response.text()
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    return { status: response.status, headers: response.headers, text, json }
  }
  const ok = async (method: string, path: string, request: Request & { readonly key: string }) => {
    const answer = await call(method, path, request)
    expect(answer.status, `${method} ${path}: ${answer.text.slice(0, 300)}`).toBe(200)
    return answer
  }
  return { shell, call, ok }
}

// ---------------------------------------------------------------------------------------------

/** The kinds of ids an account owns. */
export type OwnedKind =
  | "order"
  | "key"
  | "receipt"
  | "ticket_code"
  | "deposit_address"
  | "subscription"
  | "rental"
  | "agent"
  | "dataset"
  | "dataset_item"
  | "dataset_export"
  | "project"
  | "ingest_key"

/** A write the account sent while its world was built. */
export interface SentWrite {
  readonly method: string
  /** The path template (`/orders/:id/pay`) and the path sent. */
  readonly template: string
  readonly path: string
  readonly body: unknown
  readonly idempotencyKey: string
  readonly answer: Answer
}

export interface World {
  /** A key of the account holding every permission. */
  readonly key: string
  readonly email: string
  readonly accountId: string
  readonly ids: Record<OwnedKind, Array<string>>
  /** The parent of an id that lives under another in paths (an export's dataset, an ingest key's project). */
  readonly parents: Record<string, string>
  /** Secrets no GET shows again: key secrets, ticket codes, checkout addresses. */
  readonly secrets: Array<string>
  readonly writes: Array<SentWrite>
  /** A key holding what every GET needs, for snapshots; its last_used_at is left out of them. */
  readonly snapshotKey: { readonly id: string; readonly secret: string }
  /** Calls through /v1 that answered 200, and why the others did not. */
  readonly usageCalls: number
  readonly usageRefusals: ReadonlyArray<string>
  /** Whether the catalogue lists a model to call at all. */
  readonly usageModels: number
}

const APPROVED_CARD = "4242 4242 4242 4242"
const EXPIRY = `12/${String((new Date().getUTCFullYear() + 5) % 100).padStart(2, "0")}`

/** Pays a card checkout with the test processor's approved card (docs/payments.md). */
export const payWithApprovedCard = async (client: Client, payUrl: string) => {
  const form = await client.shell.fetch(new URL(payUrl).pathname, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ card_number: APPROVED_CARD, expiry: EXPIRY, cvc: "123" }).toString()
  })
  const html = await form.text()
  expect(form.status, html.slice(0, 300)).toBe(200)
}

export const randomToken = (n: number) => {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
  return Array.from(crypto.getRandomValues(new Uint8Array(n)), (b) => alphabet[b % alphabet.length]).join("")
}

/** An id of the same shape as `id` that was never issued (`ord_abc` -> `ord_<random>`). */
export const neverIssued = (id: string) => {
  const cut = id.lastIndexOf("_")
  return cut < 0 ? randomToken(Math.max(8, id.length)) : `${id.slice(0, cut + 1)}${randomToken(Math.max(8, id.length - cut - 1))}`
}

/** Every string inside a JSON value. */
export const stringsOf = (value: unknown, out: Set<string> = new Set()): Set<string> => {
  if (typeof value === "string") out.add(value)
  else if (Array.isArray(value)) for (const v of value) stringsOf(v, out)
  else if (value !== null && typeof value === "object") for (const v of Object.values(value)) stringsOf(v, out)
  return out
}

/**
 * Builds an account's world through the API with `key` (every permission): keys (one for
 * snapshots holding `snapshotPermissions`, one for inference, one revoked), monthly limits (the
 * account's and the inference key's), a credit order paid by
 * card, a pending order with a stablecoin deposit address, a pending package order, two paid gift
 * orders (one ticket left unredeemed, one redeemed by the account itself), a plan and a rental paid
 * by card where the catalogue offers them, their receipts, and a
 * chat and an embedding call through /v1 with two of its keys. Every write carries an
 * Idempotency-Key, kept in `writes`.
 */
export const buildWorld = async (client: Client, name: string, key: string, snapshotPermissions: ReadonlyArray<string>): Promise<World> => {
  const { call, ok } = client
  const me = (await ok("GET", "/me", { key })).json
  const ids: World["ids"] = {
    order: [],
    key: [me.key.id],
    receipt: [],
    ticket_code: [],
    deposit_address: [],
    subscription: [],
    rental: [],
    agent: [],
    dataset: [],
    dataset_item: [],
    dataset_export: [],
    project: [],
    ingest_key: []
  }
  const secrets: Array<string> = []
  const writes: Array<SentWrite> = []
  const parents: Record<string, string> = {}

  const write = async (method: string, template: string, path: string, body: unknown) => {
    const idempotencyKey = `iso-${name}-${randomToken(12)}`
    const answer = await ok(method, path, { key, body, headers: { "idempotency-key": idempotencyKey } })
    writes.push({ method, template, path, body, idempotencyKey, answer })
    return answer.json
  }
  const createKey = async (keyName: string, permissions: ReadonlyArray<string>) => {
    const created = await write("POST", "/keys", "/keys", { name: `iso-${name}-${keyName}-${randomToken(6)}`, permissions })
    ids.key.push(created.id)
    secrets.push(created.secret)
    return created as { id: string; secret: string }
  }
  const snapshotKey = await createKey("snapshot", snapshotPermissions)
  const inferenceKey = await createKey("inference", ["inference", "read"])
  const revoked = await createKey("revoked", ["read"])
  await ok("DELETE", `/keys/${revoked.id}`, { key })
  // Monthly limits: the inference key's own, and the account's with its alert settings.
  await write("POST", "/billing/keys/:id/limit", `/billing/keys/${inferenceKey.id}/limit`, { monthly_limit_credits: 500 })
  await write("POST", "/billing/limits", "/billing/limits", { monthly_limit_credits: 900, alert_points: [50, 90], alert_email: true })

  const order = async (body: Record<string, unknown>) => {
    const created = await write("POST", "/orders", "/orders", body)
    ids.order.push(created.id)
    return created
  }
  const pay = (id: string, body: Record<string, unknown>) => write("POST", "/orders/:id/pay", `/orders/${id}/pay`, body)
  const buy = async (body: Record<string, unknown>) => {
    const created = await order(body)
    const paying = await pay(created.id, { method: "card" })
    secrets.push(paying.pay_url)
    await payWithApprovedCard(client, paying.pay_url)
    return created
  }
  await buy({ type: "credits", amount_usd: 25 })
  const deposit = await order({ type: "credits", amount_usd: 7 })
  const opened = await pay(deposit.id, { method: "stablecoin", chain: "base", token: "USDC" })
  ids.deposit_address.push(opened.payment.deposit.address)
  await order({ type: "package", package_id: "starter" })
  for (const amount_usd of [5, 6]) {
    const gift = await buy({ type: "credits", amount_usd, gift: true })
    const code = (await ok("GET", `/orders/${gift.id}`, { key })).json.ticket.code as string
    ids.ticket_code.push(code)
    secrets.push(code)
  }
  await write("POST", "/credits/redeem", "/credits/redeem", { code: ids.ticket_code[1] })
  // A plan and a rental, where the catalogue offers them (the fixture: EU C's "basic", US B's rent).
  const plan = { type: "subscription", machine_id: "m-eu-c", plan_id: "basic" }
  const rental = { type: "rental", machine_id: "m-us-b", cpu_cores: 1, memory_gb: 1, hours: 2 }
  for (const body of [plan, rental]) if ((await call("POST", "/quotes", { body })).status === 200) await buy(body)
  ids.subscription.push(...((await ok("GET", "/subscriptions", { key })).json.data as Array<any>).map((r) => r.id))
  ids.rental.push(...((await ok("GET", "/rentals", { key })).json.data as Array<any>).map((r) => r.id))
  ids.receipt.push(...((await ok("GET", "/billing/receipts", { key })).json.data as Array<any>).map((r) => r.id))
  // An agent, where the shell can propose one (an identity ready, an account service and serving
  // nodes configured; else 409 or 503 and the account has none).
  await call("POST", "/agents", { key, body: { name: `iso-${name}-agent` } })
  ids.agent.push(...((await ok("GET", "/agents", { key })).json.data as Array<any>).map((r) => r.id))

  // A fieldwork project with a participant's take (a proof of work of difficulty 0), an export,
  // and an upload dataset.
  const project = await write("POST", "/fieldwork/projects", "/fieldwork/projects", {
    name: `iso-${name}-project`,
    prompts: [{ text: `say ${name}` }],
    consent: { version: "v1", text: "ok", scopes: [{ id: "rec", label: "keep", required: true }] },
    challenge_difficulty: 0
  })
  ids.project.push(project.id)
  ids.dataset.push(project.dataset_id)
  const ingestKey = await write("POST", "/fieldwork/projects/:id/ingest-keys", `/fieldwork/projects/${project.id}/ingest-keys`, {
    origins: ["https://iso.example"]
  })
  ids.ingest_key.push(ingestKey.id)
  parents[ingestKey.id] = project.id
  secrets.push(ingestKey.key)
  const flow = { key: ingestKey.key, headers: { origin: "https://iso.example" } }
  const challenge = (await call("GET", "/ingest/challenge", flow)).json
  const participant = (await call("POST", "/ingest/participants", {
    ...flow,
    body: { country: "NO", dob: "1990-01-01", challenge: challenge.challenge, nonce: "0" }
  })).json
  secrets.push(participant.token)
  const asParticipant = { key: ingestKey.key, headers: { ...flow.headers, "x-participant-token": participant.token } }
  await call("POST", "/ingest/participant/consent", { ...asParticipant, body: { given: { rec: true } } })
  const wav = encodeWav(Array.from({ length: 1600 }, (_, i) => Math.sin(i / 8)), 16000)
  const take = await call("POST", "/ingest/items?prompt=p1", {
    ...asParticipant,
    raw: wav,
    headers: { ...asParticipant.headers, "content-type": "audio/wav", "x-content-sha256": toHex(sha256(wav)) }
  })
  const item = take.json.id as string
  const exported = (await write("POST", "/datasets/:id/exports", `/datasets/${project.dataset_id}/exports`, undefined)).id as string
  ids.dataset_item.push(item)
  ids.dataset_export.push(exported)
  parents[item] = project.dataset_id
  parents[exported] = project.dataset_id
  ids.dataset.push((await write("POST", "/datasets", "/datasets", { name: `iso-${name}-uploads`, kind: "text" })).id)

  // Usage: a chat and an embedding call, with two of the account's keys, where the catalogue has them.
  const models = (await call("GET", "/v1/models")).json?.data as Array<any> | undefined
  const chat = models?.find((m) => m.endpoint === "/v1/chat/completions")
  const embed = models?.find((m) => m.endpoint === "/v1/embeddings")
  const attempts: Array<[string, unknown]> = []
  if (chat !== undefined) {
    attempts.push(["/v1/chat/completions", { model: chat.id, messages: [{ role: "user", content: `hello from ${name}` }], max_tokens: 8 }])
  }
  if (embed !== undefined) attempts.push(["/v1/embeddings", { model: embed.id, input: `isolation ${name}` }])
  let usageCalls = 0
  const usageRefusals: Array<string> = []
  for (const [path, body] of attempts) {
    for (const secret of [key, inferenceKey.secret]) {
      const answer = await call("POST", path, { key: secret, body })
      if (answer.status === 200) usageCalls++
      else usageRefusals.push(`${path} ${answer.status} ${answer.json?.error?.code ?? answer.text.slice(0, 80)}`)
    }
  }
  return {
    key,
    email: me.email,
    accountId: me.id,
    ids,
    parents,
    secrets,
    writes,
    snapshotKey,
    usageCalls,
    usageRefusals,
    usageModels: attempts.length
  }
}

/** What the world's usage came to, for the suite's printed line. */
export const usageNote = (world: World) =>
  world.usageModels === 0
    ? "no usage: the catalogue lists no chat or embedding model"
    : world.usageCalls === 0
    ? `no usage: no machine of this shell's catalogue answered (${[...new Set(world.usageRefusals)].join("; ")})`
    : `usage: ${world.usageCalls} calls through /v1 per account${
      world.usageRefusals.length > 0 ? ` (refused: ${world.usageRefusals.join("; ")})` : ""
    }`

// ---------------------------------------------------------------------------------------------
// snapshots

export type Snapshot = Record<string, unknown>

const snapshotOnce = async (client: Client, world: World, paths: ReadonlyArray<string>): Promise<Snapshot> => {
  const out: Snapshot = {}
  // The snapshot key's own last use moves with every snapshot: left out.
  const strip = (value: any) => {
    const json = structuredClone(value)
    for (const k of Array.isArray(json?.data) ? json.data : []) if (k?.id === world.snapshotKey.id) delete k.last_used_at
    if (json?.key?.id === world.snapshotKey.id) delete json.key.last_used_at
    return json
  }
  for (const path of paths) {
    const answer = await client.call("GET", path, { key: world.snapshotKey.secret })
    out[path] = { status: answer.status, body: strip(answer.json ?? answer.text) }
  }
  return out
}

/**
 * The account's state, read through `paths` (GETs) with its snapshot key, once background work
 * (metering) has settled: `idle` when the shell has one, else until two snapshots in a row agree.
 */
export const snapshot = async (
  client: Client,
  world: World,
  paths: ReadonlyArray<string>,
  idle?: () => Promise<void>
): Promise<Snapshot> => {
  if (idle !== undefined) await idle()
  let last = await snapshotOnce(client, world, paths)
  for (let i = 0; i < 20; i++) {
    await new Promise((r) => setTimeout(r, i === 0 ? 50 : 250))
    const next = await snapshotOnce(client, world, paths)
    if (JSON.stringify(next) === JSON.stringify(last)) return next
    last = next
  }
  return last
}
