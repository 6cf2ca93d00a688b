/**
 * Granting permissions (core/src/keys/Permissions.ts): a key can only grant what it holds, and a
 * requested list is normalised to the spec's order without duplicates. Examples, then properties.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { normalize, type Permission, PermissionValues, ungrantable } from "../src/keys/Permissions.ts"

describe("permissions, by example", () => {
  it("refuses to grant what the holder lacks", () => {
    expect(ungrantable(["inference", "read"], ["inference", "manage"])).toEqual(["manage"])
    expect(ungrantable(["inference", "read", "manage"], ["read", "inference"])).toEqual([])
    expect(ungrantable([], ["inference"])).toEqual(["inference"])
    expect(ungrantable(["inference"], [])).toEqual([])
  })

  it("normalises to the spec's order without duplicates", () => {
    expect(normalize(["manage", "inference", "read", "inference"])).toEqual(["inference", "read", "manage"])
    expect(normalize(["wallets:write", "datasets:read", "voices:speak"]))
      .toEqual(["datasets:read", "voices:speak", "wallets:write"])
    expect(normalize([])).toEqual([])
  })
})

const permission = fc.constantFrom(...PermissionValues)
const permissions = fc.array(permission, { maxLength: 20 })
/** A holder's set and a request drawn from within it (so subset cases are not rare). */
const heldAndSubset = fc
  .uniqueArray(permission, { minLength: 1 })
  .chain((holder) => fc.tuple(fc.constant(holder), fc.array(fc.constantFrom(...holder), { maxLength: 10 })))

const subset = (a: ReadonlyArray<Permission>, b: ReadonlyArray<Permission>) => a.every((p) => b.includes(p))

describe("ungrantable, properties", () => {
  it("is empty exactly when the request is a subset of what the holder holds", () => {
    fc.assert(fc.property(permissions, permissions, (holder, requested) => {
      expect(ungrantable(holder, requested).length === 0).toBe(subset(requested, holder))
    }))
    fc.assert(fc.property(heldAndSubset, ([holder, requested]) => {
      expect(ungrantable(holder, requested)).toEqual([])
    }))
  })

  it("returns only requested permissions, none of which the holder holds", () => {
    fc.assert(fc.property(permissions, permissions, (holder, requested) => {
      const refused = ungrantable(holder, requested)
      expect(subset(refused, requested)).toBe(true)
      expect(refused.some((p) => holder.includes(p))).toBe(false)
    }))
  })

  it("refuses every requested permission the holder lacks", () => {
    fc.assert(fc.property(permissions, permissions, (holder, requested) => {
      const refused = ungrantable(holder, requested)
      for (const p of requested) expect(refused.includes(p)).toBe(!holder.includes(p))
    }))
  })
})

describe("normalize, properties", () => {
  it("is idempotent", () => {
    fc.assert(fc.property(permissions, (requested) => {
      const once = normalize(requested)
      expect(normalize(once)).toEqual(once)
    }))
  })

  it("keeps every requested permission once and adds none", () => {
    fc.assert(fc.property(permissions, (requested) => {
      const result = normalize(requested)
      expect(new Set(result).size).toBe(result.length)
      expect(new Set(result)).toEqual(new Set(requested))
    }))
  })

  it("lists permissions in the spec's order", () => {
    fc.assert(fc.property(permissions, (requested) => {
      const indices = normalize(requested).map((p) => PermissionValues.indexOf(p))
      for (let i = 1; i < indices.length; i++) expect(indices[i]!).toBeGreaterThan(indices[i - 1]!)
    }))
  })

  it("does not depend on the request's order or repetitions", () => {
    fc.assert(fc.property(permissions, (requested) => {
      const shuffled = [...requested, ...requested].reverse()
      expect(normalize(shuffled)).toEqual(normalize(requested))
    }))
  })
})
