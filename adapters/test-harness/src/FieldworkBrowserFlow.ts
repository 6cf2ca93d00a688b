/**
 * Fieldwork end to end (docs/fieldwork.md), as a participant meets the platform's own page
 * (/fieldwork/record) in headless Chromium with a fake microphone playing a tone written here, on
 * any shell (the shell's `start`, as for the other flows, which also hands over the owner's key
 * and a view of its blob store):
 *
 * the owner makes a key with fieldwork:write and datasets:read, a project with two prompts (an
 * easy proof of work) and an ingest key for the server's origin; a link with a wrong key shows the
 * refusal, and so does a key bound to another origin (a real browser's same-origin GET sends no Origin,
 * only Sec-Fetch-Site); the participant answers the questions (the page solves the proof of work), consents,
 * records and sends a take, reloads (the token kept in localStorage continues at prompt 2) and
 * sends the second; the owner's dataset then counts 2 items and their bytes, and the blob store
 * holds 2 WAVs under datasets/<id>/ (16-bit mono at the project's rate, not silent: the tone came
 * through); the participant withdraws, and the takes are gone from the dataset and the blob store.
 * Screenshots go to the caller's `artifacts` directory.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type BrowserWorld, type FlowOptions, type FlowSetup, haveChromium, type PlatformUnderTest, startBrowserWorld } from "./BrowserWorld.ts"

/** The shell's blob store, as the flow looks into it. */
export interface BlobView {
  /** Every key starting with `prefix`. */
  readonly list: (prefix: string) => Promise<ReadonlyArray<string>>
  readonly get: (key: string) => Promise<Uint8Array | undefined>
}

/** What a shell hands this flow beyond any flow's platform. */
export interface FieldworkPlatform extends PlatformUnderTest {
  /** The owner's key (every permission), made at first start. */
  readonly ownerKey: string
  readonly blobs: BlobView
}

export interface FieldworkFlowOptions extends Omit<FlowOptions, "start" | "chromiumArgs"> {
  readonly start: (setup: FlowSetup) => Promise<FieldworkPlatform>
}

const RATE = 16_000

/** A 48 kHz 16-bit mono WAV of a warbling tone, which Chromium loops as the microphone. */
export const toneWav = (seconds = 3, rate = 48_000): Uint8Array => {
  const n = seconds * rate
  const wav = Buffer.alloc(44 + n * 2)
  wav.write("RIFF", 0)
  wav.writeUInt32LE(36 + n * 2, 4)
  wav.write("WAVEfmt ", 8)
  wav.writeUInt32LE(16, 16)
  wav.writeUInt16LE(1, 20)
  wav.writeUInt16LE(1, 22)
  wav.writeUInt32LE(rate, 24)
  wav.writeUInt32LE(rate * 2, 28)
  wav.writeUInt16LE(2, 32)
  wav.writeUInt16LE(16, 34)
  wav.write("data", 36)
  wav.writeUInt32LE(n * 2, 40)
  for (let i = 0; i < n; i++) {
    const t = i / rate
    const pitch = 2 * Math.PI * (300 + 100 * Math.sin(Math.PI * t)) * t
    wav.writeInt16LE(Math.round(16_000 * Math.sin(pitch) * (0.6 + 0.4 * Math.sin(6 * Math.PI * t))), 44 + i * 2)
  }
  return wav
}

/** The format fields of a canonical WAV and its samples' RMS (0..1). */
export const readTake = (bytes: Uint8Array) => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const text = (at: number) => String.fromCharCode(...bytes.subarray(at, at + 4))
  const samples = (bytes.length - 44) / 2
  let sum = 0
  for (let i = 0; i < samples; i++) sum += (view.getInt16(44 + i * 2, true) / 32768) ** 2
  return {
    riff: text(0) + text(8) + text(12) + text(36),
    format: view.getUint16(20, true),
    channels: view.getUint16(22, true),
    rate: view.getUint32(24, true),
    bits: view.getUint16(34, true),
    seconds: samples / view.getUint32(24, true),
    rms: Math.sqrt(sum / Math.max(1, samples))
  }
}

export const fieldworkBrowserFlow = (options: FieldworkFlowOptions) => {
  describe.skipIf(!haveChromium("fieldwork flow"))(`fieldwork's participant page in a headless browser (${options.shell})`, () => {
    let world: BrowserWorld | undefined
    let platform: FieldworkPlatform | undefined
    const micDir = mkdtempSync(join(tmpdir(), "fieldwork-mic-"))

    beforeAll(async () => {
      const mic = join(micDir, "tone.wav")
      writeFileSync(mic, toneWav())
      world = await startBrowserWorld({
        ...options,
        recoveryDelayMs: 60_000,
        start: async (setup) => (platform = await options.start(setup)),
        // The microphone allowed without a prompt, and fed from the tone.
        chromiumArgs: ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream", `--use-file-for-fake-audio-capture=${mic}`]
      })
    }, 120_000)

    afterAll(async () => {
      await world?.stop()
      rmSync(micDir, { recursive: true, force: true })
    })

    const ok = async (secret: string, method: string, path: string, body?: unknown) => {
      const answer = await world!.api(secret, method, path, body)
      expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBeLessThan(300)
      return answer.body
    }
    const shot = (page: Page, name: string) => world!.shot(page, name)
    const step = (page: Page, name: string) => page.locator(`body[data-step="${name}"]`).waitFor({ timeout: 20_000 })

    /** Records about a second and a half of the tone, and answers once the take can be sent. */
    const record = async (page: Page) => {
      await page.getByTestId("record").click()
      await page.locator(`#step-record[data-state="recording"]`).waitFor()
      await page.waitForTimeout(1_500)
      await page.getByTestId("stop").click()
      await page.locator(`#step-record[data-state="recorded"]`).waitFor()
    }
    const sent = (page: Page, n: number) => page.locator(`#progress[data-sent="${n}"]`).waitFor({ timeout: 20_000 })

    it("a participant records two takes on the platform's page, the owner sees them, and withdrawal deletes them", async () => {
      const owner = await ok(platform!.ownerKey, "POST", "/keys", {
        name: "fieldwork team",
        permissions: ["fieldwork:read", "fieldwork:write", "datasets:read"]
      })
      const team = owner.secret as string
      const project = await ok(team, "POST", "/fieldwork/projects", {
        name: "Kitchen words, Bavarian",
        prompts: [{ id: "fox", text: "The quick brown fox jumps over the lazy dog." }, { text: "Please pass me the salt and the pepper." }],
        capture: { sample_rate_hz: RATE, min_seconds: 0.5, max_seconds: 30 },
        questions: [
          { id: "dialect", text: "Which dialect do you speak at home?", kind: "text", required: true },
          { id: "native", text: "Is German your first language?", kind: "boolean", required: true },
          { id: "mic", text: "Microphone", kind: "choice", options: ["built-in", "headset"], required: true },
          { id: "langs", text: "Other languages", kind: "multi_choice", options: ["English", "French"] }
        ],
        consent: {
          version: "2026-01",
          text: "We record your voice reading short sentences.\n\nThe recordings train speech recognition for Bavarian. " +
            "You can withdraw at any time on this page; your recordings are then deleted.",
          scopes: [
            { id: "research", label: "My recordings may be used for research", required: true },
            { id: "publish", label: "Short excerpts may be published", required: false }
          ]
        },
        challenge_difficulty: 8
      })
      expect(project).toMatchObject({ prompts: [{ id: "fox" }, { id: "p2" }], participants: 0, takes: 0 })
      const datasetId = project.dataset_id as string
      const origin = new URL(world!.url).origin
      const ingest = await ok(team, "POST", `/fieldwork/projects/${project.id}/ingest-keys`, { name: "our page", origins: [origin] })
      const link = `${world!.url}/fieldwork/record#key=${ingest.key}`

      const { page } = await world!.device()
      // A wrong key, and a key for another web site: the page says what the server answered.
      await page.goto(`${world!.url}/fieldwork/record#key=mpi_wrong`)
      await expect.poll(() => page.getByTestId("message").textContent()).toMatch(/ingest key/i)
      expect(await page.getByTestId("message").getAttribute("role")).toBe("alert")
      const elsewhere = await ok(team, "POST", `/fieldwork/projects/${project.id}/ingest-keys`, { origins: ["https://team.example"] })
      await page.goto(`${world!.url}/fieldwork/record#key=${elsewhere.key}`)
      await expect.poll(() => page.getByTestId("message").textContent()).toContain(origin)

      // About you: the questions by kind; the page solves the proof of work.
      await page.goto(link)
      await step(page, "start")
      expect(await page.getByTestId("project-name").textContent()).toBe("Kitchen words, Bavarian")
      await page.getByTestId("country").fill("de")
      await page.getByTestId("region").fill("Bavaria")
      await page.getByTestId("dob").fill("1990-05-01")
      await page.locator(`[data-question="dialect"]`).fill("Boarisch")
      await page.locator(`[data-question="native"] input[value="true"]`).check()
      await page.locator(`[data-question="mic"]`).selectOption("headset")
      await page.locator(`[data-question="langs"] input[value="English"]`).check()
      await page.getByTestId("start").click()

      // Consent: the required scope is needed.
      await step(page, "consent")
      expect(await page.getByTestId("consent-text").textContent()).toContain("train speech recognition")
      await shot(page, "01-consent")
      await page.getByTestId("agree").click()
      await expect.poll(() => page.getByTestId("message").textContent()).toContain("My recordings may be used for research")
      await page.getByTestId("scope-research").check()
      await page.getByTestId("agree").click()

      // The first take; a reload continues with the token kept in localStorage.
      await step(page, "record")
      expect(await page.getByTestId("prompt-text").getAttribute("data-prompt")).toBe("fox")
      await record(page)
      await shot(page, "02-recorded")
      await page.getByTestId("send").click()
      await sent(page, 1)
      await page.reload()
      await step(page, "record")
      expect(await page.getByTestId("prompt-text").getAttribute("data-prompt")).toBe("p2")
      await record(page)
      await page.getByTestId("send").click()
      await sent(page, 2)
      await step(page, "done")
      await expect.poll(() => page.locator("#takes li").count()).toBe(2)
      expect(await page.locator(`#takes li[data-status="pending_review"]`).count()).toBe(2)
      await shot(page, "03-progress")

      // The owner's view: the dataset and the blob store.
      const dataset = await ok(team, "GET", `/datasets/${datasetId}`)
      expect(dataset).toMatchObject({ source: "fieldwork", kind: "audio", project_id: project.id, items: 2 })
      expect(dataset.bytes).toBeGreaterThan(2 * 44)
      const items = (await ok(team, "GET", `/datasets/${datasetId}/items`)).data as Array<any>
      expect(items.map((i) => i.prompt_id).sort()).toEqual(["fox", "p2"])
      expect(items.reduce((sum, i) => sum + i.bytes, 0)).toBe(dataset.bytes)
      expect(await ok(team, "GET", `/fieldwork/projects/${project.id}`)).toMatchObject({ participants: 1, takes: 2 })
      const blobs = await platform!.blobs.list(`datasets/${datasetId}/`)
      expect(blobs).toHaveLength(2)
      for (const key of blobs) {
        expect(key).toMatch(new RegExp(`^datasets/${datasetId}/participants/[^/]+/[^/]+\\.wav$`))
        const take = readTake((await platform!.blobs.get(key))!)
        expect(take).toMatchObject({ riff: "RIFFWAVEfmt data", format: 1, channels: 1, rate: RATE, bits: 16 })
        expect(take.seconds).toBeGreaterThan(1)
        expect(take.rms, "the fake microphone's tone, not silence").toBeGreaterThan(0.05)
      }

      // Withdrawal: asked once, then everything is gone and the browser forgets the participant.
      await page.getByTestId("withdraw").click()
      await page.getByTestId("withdraw-yes").click()
      await step(page, "withdrawn")
      expect(await page.getByTestId("withdrawn-text").textContent()).toContain("2 recordings were deleted")
      await shot(page, "04-withdrawn")
      const remembered = await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith("fieldwork:token:")))
      expect(remembered).toEqual([])
      expect(await ok(team, "GET", `/datasets/${datasetId}`)).toMatchObject({ items: 0, bytes: 0 })
      expect((await ok(team, "GET", `/datasets/${datasetId}/items`)).data).toEqual([])
      expect(await ok(team, "GET", `/fieldwork/projects/${project.id}`)).toMatchObject({ participants: 0, takes: 0 })
      expect(await platform!.blobs.list(`datasets/${datasetId}/`)).toEqual([])
    })
  })
}
