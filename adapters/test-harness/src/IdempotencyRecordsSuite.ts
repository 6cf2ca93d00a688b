/**
 * What the Idempotency-Key mechanism keeps, read straight from the shell's store (the memory map,
 * the PostgreSQL table, the DynamoDB items), on a clock the suite moves forward
 * (docs/api-decisions.md "Idempotency"):
 * - after `POST /keys` with an Idempotency-Key, no record holds the new key's secret, nor any 8
 *   characters of its random part: the kept answer is sealed under the caller's secret;
 * - a replay within 24 hours answers the first response byte for byte, secret included;
 * - a replay from another key of the account is 409 `idempotency_key_reused` and creates nothing;
 * - at 24 hours the record is gone (a store that leaves deletion to a TTL shows a TTL in the
 *   past), and the same request runs again: a new key, a new secret.
 */
import type { Clock } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ShellUnderTest } from "./HttpSuite.ts"
import { type Client, clientOf } from "./IsolationWorld.ts"
import { movableClock } from "./MovableClock.ts"

export interface RecordsShell extends ShellUnderTest {
  /** Every idempotency record the store holds, as it holds it (a row, an item, a record). */
  readonly idempotencyRecords: () => Promise<ReadonlyArray<Record<string, unknown>>>
}

export interface RecordsSuiteOptions {
  /**
   * The store leaves an expired record for its database to delete later (DynamoDB's TTL, which
   * DynamoDB Local never runs): the suite checks this attribute (epoch seconds) is past instead.
   */
  readonly ttlAttribute?: string
}

const HOUR = 3_600_000
const DAY = 24 * HOUR

/** Every 8 characters of a secret's random part (after `mpk_`): none may be in a record. */
const piecesOf = (secret: string): ReadonlyArray<string> => {
  const random = secret.slice("mpk_".length)
  return Array.from({ length: random.length - 7 }, (_, i) => random.slice(i, i + 8))
}

export const idempotencyRecordsSuite = (
  shell: string,
  start: (platform: { readonly clock: Clock.Clock }) => Promise<RecordsShell>,
  options: RecordsSuiteOptions = {}
) =>
  describe(`idempotency records at rest on ${shell}`, () => {
    const clock = movableClock()
    let platform: RecordsShell
    let client: Client
    beforeAll(async () => {
      platform = await start({ clock: clock.clock })
      client = clientOf(platform)
    }, 120_000)
    afterAll(async () => {
      await platform?.close()
    })

    const tag = `idem-${crypto.randomUUID()}`
    const body = { name: `${tag}-key`, permissions: ["read"] }
    const idempotencyKey = `${tag}-first`
    const createKey = (key: string, idempotency: string) =>
      client.call("POST", "/keys", { key, body, headers: { "idempotency-key": idempotency } })
    const keysNamed = async () =>
      ((await client.ok("GET", "/keys", { key: platform.ownerSecret })).json.data as Array<{ name: string }>)
        .filter((k) => k.name === body.name).length
    /** The records of `idempotency`, and every record as text. */
    const records = async (idempotency: string) => {
      const all = await platform.idempotencyRecords()
      return { mine: all.filter((r) => r["key"] === idempotency), text: all.map((r) => JSON.stringify(r)).join("\n") }
    }
    const expectNoSecret = (text: string, secret: string) => {
      expect(text).not.toContain(secret)
      for (const piece of piecesOf(secret)) expect(text, `a record holds "${piece}" of the secret`).not.toContain(piece)
    }

    let first: { readonly text: string; readonly secret: string }

    it("POST /keys with an Idempotency-Key: no stored record holds the secret or any piece of it", async () => {
      const created = await createKey(platform.ownerSecret, idempotencyKey)
      expect(created.status, created.text).toBe(200)
      first = { text: created.text, secret: created.json.secret }
      expect(first.secret).toMatch(/^mpk_[A-Za-z0-9_-]{43}$/)
      const { mine, text } = await records(idempotencyKey)
      expect(mine).toHaveLength(1)
      expectNoSecret(text, first.secret)
    })

    it("a replay within 24 hours answers the same secret, byte for byte, and creates nothing", async () => {
      clock.advance(DAY - HOUR)
      const replay = await createKey(platform.ownerSecret, idempotencyKey)
      expect(replay.status, replay.text).toBe(200)
      expect(replay.headers.get("idempotent-replayed")).toBe("true")
      expect(replay.text).toBe(first.text)
      expect(await keysNamed()).toBe(1)
    })

    it("a replay from another key of the account is 409 idempotency_key_reused and creates nothing", async () => {
      const other = await client.ok("POST", "/keys", { key: platform.ownerSecret, body: { name: `${tag}-other`, permissions: ["read", "manage"] } })
      const refused = await createKey(other.json.secret, idempotencyKey)
      expect(refused.status, refused.text).toBe(409)
      expect(refused.json.error.code).toBe("idempotency_key_reused")
      expect(refused.text).not.toContain(first.secret)
      expect(await keysNamed()).toBe(1)
    })

    it("at 24 hours the record is gone and the request runs again, with a new secret", async () => {
      clock.advance(HOUR)
      // Any claim sweeps what expired; a store with a TTL shows it past instead.
      const other = await createKey(platform.ownerSecret, `${tag}-second`)
      expect(other.status, other.text).toBe(200)
      const { mine } = await records(idempotencyKey)
      if (options.ttlAttribute === undefined) expect(mine).toEqual([])
      else {
        expect(mine).toHaveLength(1)
        // A TTL is whole seconds, rounded up from the record's last instant: due within this second.
        expect(Number(mine[0]![options.ttlAttribute])).toBeLessThanOrEqual(Math.ceil(clock.now() / 1000))
      }
      const again = await createKey(platform.ownerSecret, idempotencyKey)
      expect(again.status, again.text).toBe(200)
      expect(again.headers.get("idempotent-replayed")).toBeNull()
      expect(again.json.secret).not.toBe(first.secret)
      expect(await keysNamed()).toBe(3)
      const after = await records(idempotencyKey)
      expect(after.mine).toHaveLength(1)
      for (const secret of [first.secret, again.json.secret, other.json.secret]) expectNoSecret(after.text, secret)
    })
  })
