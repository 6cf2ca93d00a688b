/**
 * Datasets and the Fieldwork participant flow through HTTP, a suite every shell runs unchanged
 * (docs/datasets.md, docs/fieldwork.md): the owner makes a project and an ingest key; the key
 * works only from its origins and only on /ingest/*; a participant solves the proof of work,
 * consents and sends takes; each bad take is refused with its code and stores nothing (checked
 * against the shell's blob store); the owner sees counts and bytes, reviews and exports; a
 * withdrawal and a dataset's deletion leave no blob behind.
 */
import { encodeWav, ParticipantDocuments, solve, solves } from "@model-platform/core/fieldwork"
import { sha256, toHex } from "@model-platform/core/kernel"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fillPath, platformEndpoints } from "./ApiEndpoints.ts"
import type { BlobLister, DocumentReader, ShellUnderTest } from "./HttpSuite.ts"
import { clientOf, type Request } from "./IsolationWorld.ts"

export type FieldworkShell = ShellUnderTest & BlobLister & DocumentReader

const ORIGIN = "https://study.example"
const RATE = 16000

/** A 16-bit mono WAV of a `seconds` long tone at the project's rate. */
export const toneWav = (seconds: number, rate = RATE): Uint8Array =>
  encodeWav(Array.from({ length: Math.round(seconds * rate) }, (_, i) => 0.3 * Math.sin((2 * Math.PI * 440 * i) / rate)), rate)

/** The same WAV with its header changed: `channels`, `bits` per sample. */
const withFormat = (wav: Uint8Array, channels: number, bits: number): Uint8Array => {
  const copy = new Uint8Array(wav)
  const view = new DataView(copy.buffer)
  view.setUint16(22, channels, true)
  view.setUint16(34, bits, true)
  view.setUint16(32, (channels * bits) / 8, true)
  return copy
}

const hex = (bytes: Uint8Array) => toHex(sha256(bytes))

export const projectBody = (overrides: Record<string, unknown> = {}) => ({
  name: "Oslo voices",
  prompts: [{ text: "Read: the quick brown fox." }, { text: "Count from one to five." }],
  capture: { sample_rate_hz: RATE, max_seconds: 30 },
  questions: [{ id: "accent", text: "Your accent", kind: "choice", options: ["north", "south"], required: true }],
  consent: {
    version: "v1",
    text: "We keep your recordings to train speech models.",
    scopes: [{ id: "recordings", label: "Keep my recordings", required: true }, { id: "contact", label: "Contact me", required: false }]
  },
  challenge_difficulty: 6,
  ...overrides
})

export const fieldworkSuite = (shell: string, start: () => Promise<FieldworkShell>) =>
  describe(`datasets and fieldwork on ${shell}`, () => {
    let platform: FieldworkShell
    beforeAll(async () => {
      platform = await start()
    }, 120_000)
    afterAll(async () => {
      await platform?.close()
    })

    const call = (method: string, path: string, request?: Request) => clientOf(platform).call(method, path, request)
    const owner = () => platform.ownerSecret
    /** A call of the participant flow from ORIGIN with the ingest key. */
    const ingest = (key: string, method: string, path: string, o: { token?: string; body?: unknown; headers?: Record<string, string>; raw?: Uint8Array } = {}) =>
      call(method, path, {
        key,
        ...o,
        headers: { origin: ORIGIN, ...(o.token === undefined ? {} : { "x-participant-token": o.token }), ...o.headers }
      })

    const newProject = async (overrides: Record<string, unknown> = {}) => {
      const project = await call("POST", "/fieldwork/projects", { key: owner(), body: projectBody(overrides) })
      expect(project.status, project.text).toBe(200)
      const key = await call("POST", `/fieldwork/projects/${project.json.id}/ingest-keys`, { key: owner(), body: { origins: [ORIGIN] } })
      expect(key.status, key.text).toBe(200)
      return { project: project.json, key: key.json.key as string, keyId: key.json.id as string }
    }
    const newParticipant = async (key: string, device?: string) => {
      const challenge = (await ingest(key, "GET", "/ingest/challenge")).json
      const answer = await ingest(key, "POST", "/ingest/participants", {
        body: { country: "NO", dob: "1990-04-01", answers: { accent: "north" }, challenge: challenge.challenge, nonce: solve(challenge.challenge, challenge.difficulty) },
        ...(device === undefined ? {} : { headers: { "x-device-id": device } })
      })
      return answer
    }
    const consented = async (key: string) => {
      const made = await newParticipant(key)
      expect(made.status, made.text).toBe(201)
      const token = made.json.token as string
      const consent = await ingest(key, "POST", "/ingest/participant/consent", { token, body: { given: { recordings: true } } })
      expect(consent.status, consent.text).toBe(200)
      return token
    }
    const sendTake = (key: string, token: string, prompt: string, wav: Uint8Array, headers: Record<string, string> = {}) =>
      ingest(key, "POST", `/ingest/items?prompt=${prompt}`, {
        token,
        raw: wav,
        headers: { "content-type": "audio/wav", "x-content-sha256": hex(wav), ...headers }
      })
    const dataset = async (id: string) => (await call("GET", `/datasets/${id}`, { key: owner() })).json

    it("a project feeds a fieldwork dataset; its ingest key is shown once", async () => {
      const { project, keyId } = await newProject()
      expect(project.prompts.map((p: any) => p.id)).toEqual(["p1", "p2"])
      expect(project.limits).toEqual({ takes_per_prompt: 1, takes_per_participant: 2, participants_per_device: 1 })
      const listed = (await call("GET", "/datasets?source=fieldwork", { key: owner() })).json.data
      expect(listed.find((d: any) => d.id === project.dataset_id)).toMatchObject({ source: "fieldwork", kind: "audio", project_id: project.id, items: 0, bytes: 0 })
      const keys = (await call("GET", `/fieldwork/projects/${project.id}/ingest-keys`, { key: owner() })).json.data
      expect(keys).toEqual([expect.objectContaining({ id: keyId, origins: [ORIGIN], revoked_at: null })])
      expect(JSON.stringify(keys)).not.toContain("mpi_" + "x".repeat(0) + keys[0].prefix.slice(4) + "!")
      expect(keys[0]).not.toHaveProperty("key")
      const bad = await call("POST", "/fieldwork/projects", { key: owner(), body: projectBody({ prompts: [] }) })
      expect(bad.status).toBe(400)
      const badOrigin = await call("POST", `/fieldwork/projects/${project.id}/ingest-keys`, { key: owner(), body: { origins: ["http://evil.example"] } })
      expect(badOrigin.status).toBe(400)
    })

    it("the key works only from its origins, with CORS for them, and only on /ingest", async () => {
      const { project, key } = await newProject()
      const mine = await ingest(key, "GET", "/ingest/project")
      expect(mine.status, mine.text).toBe(200)
      expect(mine.headers.get("access-control-allow-origin")).toBe(ORIGIN)
      expect(mine.json).toMatchObject({ id: project.id, name: "Oslo voices", data_type: "audio" })
      const other = await call("GET", "/ingest/project", { key, headers: { origin: "https://evil.example" } })
      expect(other.status).toBe(403)
      expect(other.json.error.code).toBe("origin_not_allowed")
      expect(other.headers.get("access-control-allow-origin")).toBeNull()
      expect((await call("GET", "/ingest/project", { key })).json.error.code).toBe("origin_not_allowed")
      const preflight = await call("OPTIONS", "/ingest/items", { headers: { origin: ORIGIN, "access-control-request-method": "POST" } })
      expect(preflight.status).toBe(204)
      expect(preflight.headers.get("access-control-allow-headers")).toContain("x-participant-token")
      expect((await call("GET", "/ingest/project", { key: owner(), headers: { origin: ORIGIN } })).json.error.code).toBe("invalid_ingest_key")
      // The ingest key is no platform key: every platform endpoint that takes a key refuses it.
      for (const endpoint of platformEndpoints().filter((e) => e.access._tag === "key" && e.surface === "platform")) {
        const answer = await call(endpoint.method, fillPath(endpoint, () => "x1"), { key, headers: { origin: ORIGIN } })
        expect(answer.status, `${endpoint.method} ${endpoint.path}: ${answer.text}`).toBe(401)
      }
    })

    it("a participant needs a solved, unused challenge; a device starts as many as the project allows", async () => {
      const { key } = await newProject()
      const challenge = (await ingest(key, "GET", "/ingest/challenge")).json
      expect(challenge).toMatchObject({ algorithm: "sha256", difficulty: 6 })
      const body = { country: "NO", dob: "1990-04-01", answers: { accent: "north" }, challenge: challenge.challenge }
      let wrong = 0
      while (solves(challenge.challenge, String(wrong), 6)) wrong++
      const unsolved = await ingest(key, "POST", "/ingest/participants", { body: { ...body, nonce: String(wrong) } })
      expect(unsolved.json.error.code).toBe("challenge_not_solved")
      const nonce = solve(challenge.challenge, 6)
      const device = "device-0123456789abcdef"
      const first = await ingest(key, "POST", "/ingest/participants", { body: { ...body, nonce }, headers: { "x-device-id": device } })
      expect(first.status, first.text).toBe(201)
      expect(first.json.token).toMatch(/^mpt_[A-Za-z0-9_-]{43}$/)
      const reused = await ingest(key, "POST", "/ingest/participants", { body: { ...body, nonce } })
      expect([reused.status, reused.json.error.code]).toEqual([409, "challenge_used"])
      expect((await newParticipant(key, device)).json.error.code).toBe("device_limit_reached")
      // A withdrawn participant contributes nothing: the device may start another.
      expect((await ingest(key, "POST", "/ingest/participant/withdraw", { token: first.json.token })).status).toBe(200)
      expect((await newParticipant(key, device)).status).toBe(201)
      expect((await newParticipant(key, "short")).json.error.code).toBe("invalid_device_id")
      const unanswered = (await ingest(key, "GET", "/ingest/challenge")).json
      const noAnswer = await ingest(key, "POST", "/ingest/participants", {
        body: { country: "NO", dob: "1990-04-01", challenge: unanswered.challenge, nonce: solve(unanswered.challenge, 6) }
      })
      expect(noAnswer.json.error.code).toBe("invalid_answers")
    })

    it("each bad take is refused with its code and stores nothing; good takes count with their bytes", async () => {
      const { project, key } = await newProject()
      const made = (await newParticipant(key)).json
      const token = made.token as string
      const good = toneWav(0.5)
      expect((await sendTake(key, token, "p1", good)).json.error.code).toBe("consent_required")
      expect((await ingest(key, "POST", "/ingest/participant/consent", { token, body: { given: { contact: true } } })).json.error.code).toBe("consent_incomplete")
      const consent = await ingest(key, "POST", "/ingest/participant/consent", { token, body: { given: { recordings: true } } })
      expect(consent.json).toMatchObject({ state: "active", consent: { version: "v1", current: true, given: { recordings: true, contact: false } } })
      const refusals: Array<[string, Promise<{ status: number; json: any }>, number, string]> = [
        ["stereo", sendTake(key, token, "p1", withFormat(good, 2, 16)), 400, "wav_not_mono"],
        ["8-bit", sendTake(key, token, "p1", withFormat(good, 1, 8)), 400, "wav_not_16_bit"],
        ["13 MB", sendTake(key, token, "p1", toneWav(13 * 1024 * 1024 / 2 / RATE)), 413, "payload_too_large"],
        ["wrong checksum", sendTake(key, token, "p1", good, { "x-content-sha256": hex(toneWav(0.4)) }), 400, "checksum_mismatch"],
        ["no checksum", sendTake(key, token, "p1", good, { "x-content-sha256": "" }), 400, "missing_content_sha256"],
        ["not wav", sendTake(key, token, "p1", good, { "content-type": "audio/mpeg" }), 415, "unsupported_media_type"],
        ["another rate", sendTake(key, token, "p1", toneWav(0.5, 8000)), 400, "wav_sample_rate"],
        ["unknown prompt", sendTake(key, token, "p9", good), 404, "prompt_not_found"],
        ["no prompt", sendTake(key, token, "", good), 400, "missing_prompt"],
        ["not audio", sendTake(key, token, "p1", new TextEncoder().encode("RIFF....WAVEjunk")), 400, "invalid_wav"],
        ["bad meta", sendTake(key, token, "p1", good, { "x-fieldwork-meta": "%%%" }), 400, "invalid_meta"],
        ["too long", sendTake(key, token, "p1", toneWav(31)), 400, "take_too_long"],
        ["no token", sendTake(key, "", "p1", good), 401, "missing_participant_token"]
      ]
      for (const [name, answer, status, code] of refusals) {
        const { status: got, json } = await answer
        expect([name, got, json?.error?.code]).toEqual([name, status, code])
      }
      expect(await dataset(project.dataset_id)).toMatchObject({ items: 0, bytes: 0 })
      expect(await platform.blobs(`datasets/${project.dataset_id}/`)).toEqual([])

      const meta = Buffer.from(JSON.stringify({ capture: { device: "test" } })).toString("base64url")
      const first = await sendTake(key, token, "p1", good, { "x-fieldwork-meta": meta })
      expect(first.status, first.text).toBe(201)
      expect(first.json).toMatchObject({ prompt_id: "p1", status: "pending_review", bytes: good.length, duration_ms: 500, sha256: hex(good) })
      expect((await sendTake(key, token, "p1", good)).json.error.code).toBe("take_limit_reached")
      const second = await sendTake(key, token, "p2", toneWav(0.25))
      expect(second.status, second.text).toBe(201)
      expect((await ingest(key, "GET", "/ingest/participant", { token })).json).toMatchObject({
        state: "complete",
        prompts: [{ id: "p1", takes: 1, remaining: 0 }, { id: "p2", takes: 1, remaining: 0 }]
      })
      expect(await dataset(project.dataset_id)).toMatchObject({ items: 2, bytes: good.length + toneWav(0.25).length })
      expect(await platform.blobs(`datasets/${project.dataset_id}/`)).toHaveLength(2)

      // The owner reviews; the participant sees it.
      const reviewed = await call("POST", `/datasets/${project.dataset_id}/items/${first.json.id}/review`, {
        key: owner(),
        body: { status: "rejected", note: "too quiet" }
      })
      expect(reviewed.status, reviewed.text).toBe(200)
      const takes = (await ingest(key, "GET", "/ingest/items", { token })).json.data
      expect(takes.map((t: any) => [t.prompt_id, t.status, t.review_note])).toEqual([["p2", "pending_review", null], ["p1", "rejected", "too quiet"]])

      // A new consent text: the participant consents again before any take.
      const v2 = await call("PUT", `/fieldwork/projects/${project.id}/consent`, { key: owner(), body: { ...projectBody().consent, version: "v2" } })
      expect(v2.status, v2.text).toBe(200)
      expect((await ingest(key, "GET", "/ingest/participant", { token })).json.state).toBe("needs_consent")
    })

    it("under concurrent calls a challenge is spent once, a device's and a prompt's limits hold", async () => {
      const { key, project } = await newProject({ limits: { takes_per_prompt: 2, participants_per_device: 2 } })
      const challenge = (await ingest(key, "GET", "/ingest/challenge")).json
      const body = { country: "NO", dob: "1990-04-01", answers: { accent: "north" }, challenge: challenge.challenge, nonce: solve(challenge.challenge, 6) }
      const racing = await Promise.all(Array.from({ length: 8 }, () => ingest(key, "POST", "/ingest/participants", { body })))
      expect(racing.map((a) => a.status).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409])
      const device = "device-concurrent-0123456789"
      const onDevice = await Promise.all(Array.from({ length: 6 }, () => newParticipant(key, device)))
      expect(onDevice.filter((a) => a.status === 201)).toHaveLength(2)
      expect(onDevice.filter((a) => a.status !== 201).map((a) => a.json.error.code)).toEqual(Array(4).fill("device_limit_reached"))
      const token = await consented(key)
      const takes = await Promise.all(Array.from({ length: 8 }, () => sendTake(key, token, "p1", toneWav(0.1))))
      expect(takes.filter((a) => a.status === 201)).toHaveLength(2)
      expect(takes.filter((a) => a.status !== 201).map((a) => a.json.error.code)).toEqual(Array(6).fill("take_limit_reached"))
      expect(await dataset(project.dataset_id)).toMatchObject({ items: 2 })
      expect(await platform.blobs(`datasets/${project.dataset_id}/`)).toHaveLength(2)
    })

    it("random bodies and headers on the participant flow: never a 5xx, always the error shape", async () => {
      const { key } = await newProject()
      const token = await consented(key)
      const text = fc.oneof(fc.string({ unit: "binary", maxLength: 20 }), fc.constantFrom("", "\u0000", "__proto__", "x".repeat(300)))
      const json = fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.record({
        country: text, region: text, dob: text, challenge: text, nonce: text,
        answers: fc.dictionary(text, fc.oneof(text, fc.integer(), fc.boolean())), given: fc.dictionary(text, fc.jsonValue({ maxDepth: 1 }))
      }, { requiredKeys: [] }))
      // Header values a client can send at all (printable ASCII).
      const headerText = fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 80 })
      const request = fc.record({
        path: fc.constantFrom("/ingest/participants", "/ingest/participant/consent", "/ingest/items?prompt=p1", "/ingest/items?prompt=%00"),
        body: fc.oneof(json.map((v) => new TextEncoder().encode(JSON.stringify(v))), fc.uint8Array({ maxLength: 64 })),
        token: fc.oneof(fc.constant(token), headerText),
        sha: fc.oneof(headerText, fc.constant("0".repeat(64))),
        meta: fc.oneof(headerText, fc.jsonValue({ maxDepth: 12 }).map((v) => Buffer.from(JSON.stringify(v)).toString("base64url"))),
        contentType: fc.constantFrom("application/json", "audio/wav", "text/plain", "")
      })
      await fc.assert(fc.asyncProperty(request, async (r) => {
        const answer = await ingest(key, "POST", r.path, {
          token: r.token,
          raw: r.body,
          headers: { "content-type": r.contentType, "x-content-sha256": r.sha, "x-fieldwork-meta": r.meta }
        }).catch((e: unknown) => ({ status: 0, json: undefined, text: String(e) }))
        expect(answer.status, answer.text).toBeGreaterThanOrEqual(400)
        expect(answer.status, answer.text).toBeLessThan(500)
        expect(Object.keys(answer.json?.error ?? {}).sort(), answer.text).toEqual(["code", "message"])
      }), { numRuns: 60 })
    })

    it("a withdrawal deletes the takes from the dataset, its exports and the blob store, and erases the participant's fields", async () => {
      const { project, key, keyId } = await newProject()
      const made = await newParticipant(key, "device-of-the-withdrawer")
      expect(made.status, made.text).toBe(201)
      const { token, participant_id: participantId } = made.json as { token: string; participant_id: string }
      expect((await ingest(key, "POST", "/ingest/participant/consent", { token, body: { given: { recordings: true } } })).status).toBe(200)
      const other = await consented(key)
      for (const t of [token, other]) expect((await sendTake(key, t, "p1", toneWav(0.3))).status).toBe(201)
      expect((await sendTake(key, token, "p2", toneWav(0.3))).status).toBe(201)
      const exported = await call("POST", `/datasets/${project.dataset_id}/exports`, { key: owner() })
      expect(exported.json).toMatchObject({ items: 3 })
      const remaining = (await call("GET", `/datasets/${project.dataset_id}/items`, { key: owner() })).json.data
        .filter((i: any) => i.participant_id !== participantId)
      const withdrawn = await ingest(key, "POST", "/ingest/participant/withdraw", { token })
      expect(withdrawn.json).toEqual({ withdrawn: true, deleted_takes: 2 })
      expect((await ingest(key, "GET", "/ingest/participant", { token })).json.error.code).toBe("participant_withdrawn")
      expect(await dataset(project.dataset_id)).toMatchObject({ items: 1 })
      const blobs = await platform.blobs(`datasets/${project.dataset_id}/participants/`)
      expect(blobs).toHaveLength(1)

      // Every export lists only what is left, in its manifest and its counts.
      const manifest = (await call("GET", `/datasets/${project.dataset_id}/exports/${exported.json.id}`, { key: owner() })).json
      expect(manifest.manifest).toEqual(remaining.map((i: any) => ({ ...i, available: true })))
      expect(manifest).toMatchObject({ items: 1, bytes: remaining[0].bytes })
      expect((await call("GET", `/datasets/${project.dataset_id}/exports`, { key: owner() })).json.data[0]).toMatchObject({ items: 1 })
      // Nothing stored of the dataset mentions the participant any more: the manifest blob was rewritten.
      for (const blobKey of await platform.blobs(`datasets/${project.dataset_id}/`)) {
        const bytes = await platform.blob(blobKey)
        expect(new TextDecoder().decode(bytes).includes(participantId), blobKey).toBe(false)
      }
      // The record keeps what refuses the token and nothing the person gave.
      const record = await platform.document(ParticipantDocuments, participantId)
      expect(record).toMatchObject({
        id: participantId,
        device_id: "device-of-the-withdrawer",
        withdrawn_at: expect.any(String),
        country: null,
        region: null,
        dob: null,
        answers: {},
        consent: null
      })
      // Withdrawing again (a withdrawal cut short) finishes what is left, and there is nothing.
      expect((await ingest(key, "POST", "/ingest/participant/withdraw", { token })).json).toEqual({ withdrawn: true, deleted_takes: 0 })

      // A revoked key stops at once.
      expect((await call("DELETE", `/fieldwork/projects/${project.id}/ingest-keys/${keyId}`, { key: owner() })).json.revoked_at).not.toBeNull()
      expect((await ingest(key, "GET", "/ingest/project")).json.error.code).toBe("invalid_ingest_key")
    })

    it("deleting a dataset leaves no blob, record or export behind, and refuses takes after", async () => {
      const { project, key } = await newProject({ prompts: [{ text: "one" }, { text: "two" }, { text: "three" }] })
      const token = await consented(key)
      for (const p of ["p1", "p2"]) expect((await sendTake(key, token, p, toneWav(0.2))).status).toBe(201)
      expect((await call("POST", `/datasets/${project.dataset_id}/exports`, { key: owner() })).status).toBe(200)
      expect((await platform.blobs(`datasets/${project.dataset_id}/`)).length).toBe(3)
      const deleted = await call("DELETE", `/datasets/${project.dataset_id}`, { key: owner() })
      expect(deleted.json).toEqual({ id: project.dataset_id, deleted: true })
      expect(await platform.blobs(`datasets/${project.dataset_id}/`)).toEqual([])
      expect((await call("GET", `/datasets/${project.dataset_id}`, { key: owner() })).status).toBe(404)
      expect((await call("GET", "/datasets", { key: owner() })).json.data.map((d: any) => d.id)).not.toContain(project.dataset_id)
      expect((await call("DELETE", `/datasets/${project.dataset_id}`, { key: owner() })).status).toBe(404)
      expect((await sendTake(key, token, "p3", toneWav(0.2))).json.error.code).toBe("dataset_deleted")
      expect(await platform.blobs(`datasets/${project.dataset_id}/`)).toEqual([])
    })

    it("a file streams into an upload dataset, checked against its SHA-256; a bad one stores nothing", async () => {
      const made = await call("POST", "/datasets", { key: owner(), body: { name: "notes", kind: "text" } })
      expect(made.json).toMatchObject({ source: "upload", kind: "text", project_id: null, items: 0 })
      const id = made.json.id as string
      const listed = async (query: string) => (await call("GET", `/datasets?${query}`, { key: owner() })).json.data as Array<any>
      expect((await listed("kind=text")).map((d) => d.id)).toContain(id)
      expect((await listed("kind=audio")).map((d) => d.id)).not.toContain(id)
      expect((await listed("source=upload&kind=text")).every((d) => d.source === "upload" && d.kind === "text")).toBe(true)
      // 20 MiB: far over a management body, streamed into the store.
      const file = new Uint8Array(20 * 1024 * 1024).map((_, i) => 97 + (i % 26))
      const upload = (body: Uint8Array, headers: Record<string, string> = {}, o: { key?: string; path?: string } = {}) =>
        call("POST", o.path ?? `/datasets/${id}/items?name=letters.txt`, {
          key: o.key ?? owner(),
          raw: body,
          headers: { "content-type": "text/plain; charset=utf-8", "x-content-sha256": hex(body), ...headers }
        })
      const stored = await upload(file)
      expect(stored.status, stored.text).toBe(201)
      expect(stored.json).toMatchObject({ name: "letters.txt", content_type: "text/plain", bytes: file.length, sha256: hex(file), participant_id: null })
      const reader = await call("POST", "/keys", { key: owner(), body: { name: "reader", permissions: ["datasets:read"] } })
      const fieldwork = (await call("POST", "/fieldwork/projects", { key: owner(), body: projectBody() })).json.dataset_id
      const small = new TextEncoder().encode("hello")
      const refusals: Array<[string, { status: number; json: any }, number, string]> = [
        ["wrong checksum", await upload(small, { "x-content-sha256": hex(file) }), 400, "checksum_mismatch"],
        ["no checksum", await upload(small, { "x-content-sha256": "" }), 400, "missing_content_sha256"],
        ["not text", await upload(small, { "content-type": "image/png" }), 415, "unsupported_media_type"],
        ["no name", await upload(small, {}, { path: `/datasets/${id}/items` }), 400, "invalid_name"],
        ["read-only key", await upload(small, {}, { key: reader.json.secret }), 403, "key_lacks_permission"],
        ["no key", await upload(small, {}, { key: "" }), 401, "missing_api_key"],
        ["unknown dataset", await upload(small, {}, { path: "/datasets/ds_none/items?name=a.txt" }), 404, "dataset_not_found"],
        ["fieldwork dataset", await upload(small, { "content-type": "audio/wav" }, { path: `/datasets/${fieldwork}/items?name=a.wav` }), 409, "not_an_upload_dataset"]
      ]
      for (const [name, { status, json }, expected, code] of refusals) expect([name, status, json?.error?.code]).toEqual([name, expected, code])
      if (platform.newAccount !== undefined) {
        const other = await upload(small, {}, { key: await platform.newAccount() })
        expect([other.status, other.json.error.code]).toEqual([404, "dataset_not_found"])
      }
      expect(await dataset(id)).toMatchObject({ items: 1, bytes: file.length, updated_at: stored.json.created_at })
      expect(await platform.blobs(`datasets/${id}/`)).toHaveLength(1)
      // The owner downloads it back, byte for byte; nobody else can.
      const content = `/datasets/${id}/items/${stored.json.id}/content`
      const download = await platform.fetch(content, { headers: { authorization: `Bearer ${reader.json.secret}` } })
      expect([download.status, download.headers.get("content-type"), download.headers.get("x-content-sha256")]).toEqual([200, "text/plain", hex(file)])
      expect(hex(new Uint8Array(await download.arrayBuffer()))).toBe(hex(file))
      if (platform.newAccount !== undefined) {
        expect((await call("GET", content, { key: await platform.newAccount() })).json.error.code).toBe("dataset_not_found")
      }
      expect((await call("GET", `/datasets/${id}/items/it_none/content`, { key: owner() })).json.error.code).toBe("item_not_found")
      expect((await call("DELETE", `/datasets/${id}`, { key: owner() })).status).toBe(200)
      expect(await platform.blobs(`datasets/${id}/`)).toEqual([])
    })
  })
