/**
 * What the browser flows share (AccountsBrowserFlow.ts, BillingPageFlow.ts): the world a flow runs
 * in — the reference machine and the local SMTP server started here, the platform the shell's
 * `start` serves on them, headless Chromium — and the steps every person takes in it: a device with
 * a DevTools virtual authenticator, a link from a mail, buying credits on the manage page and
 * paying them on the checkout page, a call of the API with a person's key.
 */
import { type CatalogueConfig, parseCatalogue } from "@model-platform/core/catalogue"
import { startReferenceMachine, type ReferenceMachine } from "@model-platform/reference-machine/ReferenceMachine"
import { type Clock, Effect } from "effect"
import { existsSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"
import { type Mailbox, recipients, startSmtp } from "./LocalSmtp.ts"
import { movableClock } from "./MovableClock.ts"

/**
 * The demo catalogue (its JSON text) pointed at the flow's reference machine, with each service's
 * free allowance and trial cut to 0.05 credits: a few chat calls use them up (the billing page
 * shows them used), and the calls after them are paid with credits, as the flows need.
 */
export const flowCatalogue = (demoJson: string, machineUrl: string): CatalogueConfig => {
  const demo = Effect.runSync(parseCatalogue(demoJson.replace("http://127.0.0.1:8101/v1", machineUrl)))
  const small = (n: number) => Math.min(n, 0.05)
  return {
    ...demo,
    prices: {
      ...demo.prices,
      services: demo.prices.services.map((s) => ({
        ...s,
        allowances: { ...s.allowances, free: small(s.allowances.free), trial: small(s.allowances.trial) }
      }))
    }
  }
}

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"

/** Whether Chromium is installed; says so once when it is not (the flows are then skipped). */
export const haveChromium = (flow: string): boolean => {
  const found = existsSync(CHROMIUM)
  if (!found) console.warn(`${flow}: no Chromium at ${CHROMIUM}; run scripts/ensure-chromium.sh`)
  return found
}

/** What a flow hands the shell's `start`. */
export interface FlowSetup {
  /** The local SMTP server, `smtp://127.0.0.1:<port>` (no TLS, no authentication): send mail there. */
  readonly smtpUrl: string
  /** The reference machine's OpenAI base URL: the demo catalogue's `http://127.0.0.1:8101/v1` becomes this. */
  readonly machineUrl: string
  /** The account service's recovery delay (AccountsConfig.recoveryDelayMs). */
  readonly recoveryDelayMs: number
  /** The platform's clock (PlatformOptions.clock): the flow may move it forward (BrowserWorld.advanceClock). */
  readonly clock: Clock.Clock
}

/** The platform a shell started for a flow. */
export interface PlatformUnderTest {
  /** Where API clients call it, e.g. `http://127.0.0.1:<port>`. */
  readonly url: string
  /**
   * The account service as a person opens it, `http://localhost:<port>/accounts` (its
   * ACCOUNTS_URL): passkeys need a secure context, which localhost is and 127.0.0.1 is not.
   */
  readonly accounts: string
  /** The owner key the first start made (every permission), as `./platform start` prints it. */
  readonly ownerSecret?: string | undefined
  readonly stop: () => Promise<void>
}

export interface FlowOptions {
  /** Names the suite, e.g. "node-http, PostgreSQL, SMTP". */
  readonly shell: string
  /** Where the screenshots go. */
  readonly artifacts: string
  readonly start: (setup: FlowSetup) => Promise<PlatformUnderTest>
  /** More Chromium switches, after the usual ones (e.g. a fake microphone for the fieldwork flow). */
  readonly chromiumArgs?: ReadonlyArray<string> | undefined
}

/** A person's device: a browser context with its own virtual authenticator. */
export interface Device {
  readonly context: BrowserContext
  readonly page: Page
  /** The device is replaced by a new one (the old one gone: its passkey with it). */
  readonly replace: () => Promise<void>
}

export interface BrowserWorld {
  readonly url: string
  readonly accounts: string
  /** The first-start owner's key, when the shell handed it over (PlatformUnderTest.ownerSecret). */
  readonly ownerSecret: string | undefined
  readonly mailbox: Mailbox
  readonly device: () => Promise<Device>
  readonly shot: (page: Page, name: string) => Promise<unknown>
  /** Moves the platform's clock forward (a link expiring). */
  readonly advanceClock: (ms: number) => void
  /** A JSON call with a person's key (a body is sent with an Idempotency-Key). */
  readonly api: (secret: string, method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>
  /** The newest mail to `address` (among those after the first `after`) with a link like `pattern`, waited for. */
  readonly linkIn: (address: string, pattern: RegExp, after?: number) => Promise<string>
  /** Buys credits on the manage page and pays them with the test card; answers the order's id. */
  readonly buy: (page: Page, amountUsd: number, options?: { gift?: boolean; shots?: string }) => Promise<string>
  /** Pays the order page's order on the checkout page with the test card 4242…; answers the order's id. */
  readonly payOrderPage: (page: Page) => Promise<string>
  /**
   * Signs a new person up with a passkey, confirms by mail, creates a key (with `manage` too when
   * asked); answers its secret.
   */
  readonly signUp: (page: Page, email: string, options?: { readonly manage?: boolean }) => Promise<string>
  readonly stop: () => Promise<void>
}

export const startBrowserWorld = async (options: FlowOptions & { readonly recoveryDelayMs: number }): Promise<BrowserWorld> => {
  mkdirSync(options.artifacts, { recursive: true })
  const machine: ReferenceMachine = await startReferenceMachine({ port: 0 })
  const mailbox = await startSmtp()
  const clock = movableClock()
  const platform = await options.start({ smtpUrl: mailbox.url, machineUrl: machine.url, recoveryDelayMs: options.recoveryDelayMs, clock: clock.clock })
  const browser: Browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync",
      ...(options.chromiumArgs ?? [])]
  })
  const { url, accounts } = platform

  const shot = (page: Page, name: string) => page.screenshot({ path: join(options.artifacts, `${name}.png`), fullPage: true })

  const device = async (): Promise<Device> => {
    const context = await browser.newContext()
    const page = await context.newPage()
    const cdp = await context.newCDPSession(page)
    await cdp.send("WebAuthn.enable")
    const authenticator = () =>
      cdp.send("WebAuthn.addVirtualAuthenticator", {
        options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true }
      }).then((r) => r.authenticatorId)
    const first = await authenticator()
    const replace = async () => {
      await cdp.send("WebAuthn.removeVirtualAuthenticator", { authenticatorId: first })
      await authenticator()
    }
    return { context, page, replace }
  }

  const api = async (secret: string, method: string, path: string, body?: unknown) => {
    const headers: Record<string, string> = { authorization: `Bearer ${secret}` }
    if (body !== undefined) {
      headers["content-type"] = "application/json"
      headers["idempotency-key"] = crypto.randomUUID()
    }
    const response = await fetch(url + path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
    return { status: response.status, body: await response.json() as any }
  }

  const linkIn = async (address: string, pattern: RegExp, after = 0): Promise<string> => {
    const deadline = Date.now() + 15_000
    while (Date.now() < deadline) {
      const mails = mailbox.received.slice(after).filter((m) => recipients(m).includes(address))
      for (const mail of mails.reverse()) {
        const link = pattern.exec(mail.text ?? "")?.[0]
        if (link !== undefined) return link
      }
      await new Promise((r) => setTimeout(r, 100))
    }
    throw new Error(`no mail to ${address} with a link like ${pattern}`)
  }

  const payOrderPage = async (page: Page, shots?: string) => {
    await page.locator("#pay-link").waitFor()
    const orderId = (await page.locator("#order-id").textContent())!.trim()
    if (shots !== undefined) await shot(page, `${shots}-order`)
    await page.click("#pay-link")
    await page.getByTestId("card-number").waitFor()
    if (shots !== undefined) await shot(page, `${shots}-checkout`)
    await page.getByTestId("card-number").fill("4242 4242 4242 4242")
    await page.getByTestId("expiry").fill("12/34")
    await page.getByTestId("cvc").fill("123")
    await page.getByTestId("pay").click()
    await page.getByTestId("paid").waitFor({ timeout: 15_000 })
    if (shots !== undefined) await shot(page, `${shots}-paid`)
    return orderId
  }

  const buy = async (page: Page, amountUsd: number, buying: { gift?: boolean; shots?: string } = {}) => {
    await page.goto(`${accounts}/manage`)
    await page.fill("#buy-amount", String(amountUsd))
    if (buying.gift === true) await page.check("#buy-gift")
    await page.click("#buy-credits")
    return payOrderPage(page, buying.shots)
  }

  const signUp = async (page: Page, email: string, signUpOptions: { readonly manage?: boolean } = {}) => {
    await page.goto(`${accounts}/sign-up`)
    await page.fill("#email", email)
    await page.click("#sign-up")
    await page.waitForURL(/\/accounts\/check-email/, { timeout: 15_000 })
    await page.goto(await linkIn(email, /https?:\/\/\S+\/confirm\?token=[\w-]+/))
    await page.click("#confirm")
    await page.waitForURL(/\/accounts\/welcome/)
    await page.fill("#key-name", "my key")
    if (signUpOptions.manage === true) await page.check(`input[name="permission"][value="manage"]`)
    await page.click("#create-key")
    return (await page.locator("#key-secret").textContent())!.trim()
  }

  return {
    url,
    accounts,
    ownerSecret: platform.ownerSecret,
    mailbox,
    device,
    shot,
    advanceClock: clock.advance,
    api,
    linkIn,
    buy,
    payOrderPage: (page) => payOrderPage(page),
    signUp,
    stop: async () => {
      await browser.close()
      await platform.stop()
      await mailbox.close()
      await machine.close()
    }
  }
}
