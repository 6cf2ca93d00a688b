/**
 * Sends a simulated stablecoin deposit to a running platform (docs/payments.md, "Sending a
 * simulated deposit"). The catalogue's payments.stablecoin.processor must be "simulated"; the key
 * must be the owner's (with manage). It posts to POST /_simulated/deposits, which records the
 * transfer exactly as a chain watcher would hand it over.
 *
 *   ./platform node scripts/send-deposit.ts --order ord_123                # what remains due
 *   ./platform node scripts/send-deposit.ts --order ord_123 --amount 4     # a short deposit
 *   ./platform node scripts/send-deposit.ts --to 0xabc... --amount 25 [--chain base --token USDC]
 *
 * Options: --url (default $PLATFORM_URL, else http://127.0.0.1:$PORT with the port the server was
 * started with, 8080 when PORT is unset), --key (default $PLATFORM_KEY),
 * --at (chain time, ISO 8601 with milliseconds), --tx (a transaction id; the same one again is a
 * replay and changes nothing), --json (print the whole answer).
 */
import { parseArgs } from "node:util"

const { values } = parseArgs({
  options: {
    url: { type: "string" },
    key: { type: "string" },
    order: { type: "string" },
    to: { type: "string" },
    amount: { type: "string" },
    chain: { type: "string" },
    token: { type: "string" },
    at: { type: "string" },
    tx: { type: "string" },
    json: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false }
  }
})

const usage = `usage: ./platform node scripts/send-deposit.ts (--order <order id> | --to <address>) [--amount <decimal>]
       [--chain <chain> --token <token>] [--at <ISO time>] [--tx <tx id>] [--url <base url>] [--key <owner key>] [--json]
The key defaults to $PLATFORM_KEY; the url to $PLATFORM_URL, else http://127.0.0.1:$PORT (PORT as the server
was started with, default 8080).`

const fail = (message: string): never => {
  console.error(message)
  process.exit(1)
}

if (values.help) {
  console.log(usage)
  process.exit(0)
}
const key = values.key ?? process.env["PLATFORM_KEY"] ?? fail(`No key: pass --key or set PLATFORM_KEY (the owner's key).\n${usage}`)
// The same PORT the server reads (adapters/node-http/src/Config.ts), so a server started with
// PORT=18080 is found without --url.
const localUrl = `http://127.0.0.1:${process.env["PORT"] || "8080"}`
const base = (values.url ?? process.env["PLATFORM_URL"] ?? localUrl).replace(/\/+$/, "")
if ((values.order === undefined) === (values.to === undefined)) fail(`Give --order or --to.\n${usage}`)

const body: Record<string, string> = {}
for (const [field, value] of [
  ["order_id", values.order],
  ["to", values.to],
  ["amount", values.amount],
  ["chain", values.chain],
  ["token", values.token],
  ["at", values.at],
  ["tx", values.tx]
] as const) {
  if (value !== undefined) body[field] = value
}

let response: Response
try {
  response = await fetch(`${base}/_simulated/deposits`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
} catch (error) {
  fail(`Cannot reach the platform at ${base}: ${error instanceof Error ? error.message : String(error)}`)
  throw error
}
const answer = await response.json().catch(() => undefined) as any
if (!response.ok) {
  fail(`${response.status} ${answer?.error?.code ?? ""}: ${answer?.error?.message ?? "the platform refused the deposit"}`)
}
if (values.json) {
  console.log(JSON.stringify(answer, null, 2))
} else {
  const t = answer.transfer
  console.log(`Sent ${t.amount} ${t.token} on ${t.chain} to ${t.to} (tx ${t.tx}, at ${t.at}).`)
  console.log(`Outcome: ${answer.outcome}${answer.recorded ? "" : " (a replay: this tx was already recorded, nothing changed)"}.`)
  const o = answer.order
  if (o === null) {
    console.log("No order owns this address: the deposit is owed back.")
  } else {
    console.log(
      `Order ${o.order_id}: ${o.status}; due ${o.amount_due}, received ${o.received}, remaining ${o.remaining}, owed back ${o.refund_due}.`
    )
  }
}
