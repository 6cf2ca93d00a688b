/**
 * The demo catalogue (adapters/node-http/catalogue.demo.json) ships as the default: it must decode
 * with core's CatalogueConfig schema, its references must hold, and docs/catalogue.md must
 * document every field it uses.
 */
import { CatalogueConfig, validateCatalogue } from "@model-platform/core/catalogue"
import { rentOfferOf, subscribeOfferOf } from "@model-platform/core/plans"
import { Schema } from "effect"
import { readFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { describe, expect, it } from "vitest"

const PACKAGE = resolve(import.meta.dirname, "..")
const DEMO_FILE = join(PACKAGE, "catalogue.demo.json")
const DOCS_FILE = resolve(PACKAGE, "../../docs/catalogue.md")

const raw: unknown = JSON.parse(readFileSync(DEMO_FILE, "utf8"))
const decode = Schema.decodeUnknownSync(CatalogueConfig)

describe("the demo catalogue", () => {
  const demo = decode(raw)

  it("decodes with CatalogueConfig and its references hold", () => {
    expect(validateCatalogue(demo)).toEqual([])
  })

  it("its rent and subscribe offers can be ordered (plans/Offers.ts)", () => {
    for (const m of demo.machines) {
      if (m.rent !== null) expect(rentOfferOf(m), `${m.id} rent`).toBeDefined()
      if (m.subscribe !== null) expect(subscribeOfferOf(m), `${m.id} subscribe`).toBeDefined()
    }
    expect(demo.machines.some((m) => m.rent !== null && m.subscribe !== null)).toBe(true)
  })

  it("has no field the schema does not know (decoding alone would drop a misspelt one)", () => {
    expect(() => decode(raw, { onExcessProperty: "error" })).not.toThrow()
  })

  it("has the reference machine serving the four reference models on CPU", () => {
    const ref = demo.machines.find((m) => m.id === "ref-local")
    expect(ref).toMatchObject({ base_url: "http://127.0.0.1:8101/v1", region: "local" })
    expect(ref?.hardware.gpus).toEqual([])
    expect(ref?.serverless_models).toEqual(["ref-chat", "ref-embed", "ref-forecast", "ref-image"])
    const embed = demo.models.find((m) => m.id === "ref-embed")
    expect(embed?.limits).toEqual({ dimensions: [1024, 768, 512, 256, 128, 64, 32], max_inputs: 256 })
    expect(demo.models.find((m) => m.id === "ref-forecast")?.limits).toEqual({ max_history: 512, max_horizon: 64 })
    // The reference machine draws at most 256 pixels a side, 64x64 when asked for no size.
    expect(demo.models.find((m) => m.id === "ref-image")?.limits).toEqual({ image_sizes: ["64x64", "128x128", "256x256"] })
  })

  // Checks validateCatalogue does not make (yet), kept true of the demo file here.
  it("bills every model under a service of the price table, once each", () => {
    const services = demo.prices.services.map((s) => s.service)
    expect(new Set(services).size).toBe(services.length)
    for (const model of demo.models) expect(services).toContain(model.service)
  })

  it("gives each machine its own base_url, and every tier more than the one before", () => {
    const urls = demo.machines.map((m) => m.base_url)
    expect(new Set(urls).size).toBe(urls.length)
    expect(demo.tiers.map((t) => t.tier)).toEqual(demo.tiers.map((_, i) => i))
    for (let i = 1; i < demo.tiers.length; i++) {
      expect(demo.tiers[i]!.rpm).toBeGreaterThan(demo.tiers[i - 1]!.rpm)
      expect(demo.tiers[i]!.monthly_limit_credits).toBeGreaterThan(demo.tiers[i - 1]!.monthly_limit_credits)
    }
  })

  it("has every field it uses documented in docs/catalogue.md", () => {
    const docs = readFileSync(DOCS_FILE, "utf8")
    const keys = new Set<string>()
    const collect = (value: unknown): void => {
      if (Array.isArray(value)) value.forEach(collect)
      else if (value !== null && typeof value === "object") {
        for (const [key, inner] of Object.entries(value)) {
          keys.add(key)
          collect(inner)
        }
      }
    }
    collect(raw)
    expect([...keys].filter((key) => !docs.includes(`\`${key}\``))).toEqual([])
  })
})

describe("the minimal example of docs/catalogue.md", () => {
  it("decodes and its references hold", () => {
    const docs = readFileSync(DOCS_FILE, "utf8")
    const example = /## A minimal catalogue[\s\S]*?```json\n([\s\S]*?)```/.exec(docs)?.[1]
    expect(example).toBeDefined()
    expect(validateCatalogue(decode(JSON.parse(example!)))).toEqual([])
  })
})

describe("validateCatalogue on a broken catalogue", () => {
  const demo = decode(raw)

  it("reports a machine naming an unknown operator", () => {
    const broken = {
      ...demo,
      machines: demo.machines.map((m) => (m.id === "us-gpu-1" ? { ...m, operator: "nobody" } : m))
    }
    expect(validateCatalogue(broken)).toEqual(['machine "us-gpu-1" names unknown operator "nobody"'])
  })

  it("reports unknown models, pinned machines, duplicate ids and badly ordered tiers", () => {
    const broken = {
      ...demo,
      operators: [...demo.operators, demo.operators[0]!],
      machines: demo.machines.map((m) =>
        m.id === "ref-local" ? { ...m, serverless_models: [...m.serverless_models, "ref-missing"] } : m
      ),
      packages: demo.packages.map((p) => (p.kind === "offer" ? { ...p, machine_id: "gone-1" } : p)),
      tiers: [...demo.tiers].reverse()
    }
    expect(validateCatalogue(broken)).toEqual([
      'operator id "ref-lab" appears twice',
      'machine "ref-local" serves unknown model "ref-missing"',
      'package "eu-gpu-launch" pins unknown machine "gone-1"',
      "the first tier must start at 0 purchased credits",
      "tiers must be listed by strictly rising purchased_credits"
    ])
  })

  it("refuses a file that does not match the schema", () => {
    const wrong = JSON.parse(JSON.stringify(raw)) as { machines: Array<Record<string, unknown>> }
    wrong.machines[0]!["score"] = 2
    expect(() => decode(wrong)).toThrow()
    const noTiers = { ...(raw as Record<string, unknown>), tiers: [] }
    expect(() => decode(noTiers)).toThrow()
  })
})
