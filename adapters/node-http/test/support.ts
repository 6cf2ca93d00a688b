/** Starts the real Node server on a free port for the shared HTTP suite. */
import { FirstStart } from "@model-platform/core/accounts"
import { AutoReload, UsageStore } from "@model-platform/core/billing"
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import { createAccount } from "@model-platform/test-harness/Accounts"
import type { AlertsShell } from "@model-platform/test-harness/BillingAlertsSuite"
import type { StatementsShell } from "@model-platform/test-harness/BillingStatementsSuite"
import { DocumentStores } from "@model-platform/core/kernel"
import { LedgerStore } from "@model-platform/core/ledger"
import type { DocumentReader } from "@model-platform/test-harness/HttpSuite"
import { Effect, type Layer, ManagedRuntime } from "effect"
import { HttpServer } from "effect/http"
import { serverLayer, type ServerOptions, type Stores } from "../src/Server.ts"

export { freshDatabaseUrl } from "../../postgres-stores/test/freshDatabase.ts"

export const startNodeServer = async <E>(
  catalogue: CatalogueConfig,
  stores: Layer.Layer<Stores, E>,
  options: { readonly platform?: ServerOptions["platform"]; readonly publicUrl?: string } = {}
): Promise<StatementsShell & AlertsShell & DocumentReader & { readonly url: string; readonly firstStart: boolean }> => {
  const runtime = ManagedRuntime.make(
    serverLayer({ catalogue, port: 0, host: "127.0.0.1", ownerEmail: "owner@test.local", platform: options.platform, publicUrl: options.publicUrl }, stores)
  )
  const [server, owner] = await runtime.runPromise(Effect.all([HttpServer.HttpServer, FirstStart]))
  if (server.address._tag === "UnixPathAddress") throw new Error("expected a TCP address")
  const url = `http://127.0.0.1:${server.address.port}`
  return {
    url,
    firstStart: owner !== undefined,
    ownerSecret: owner?.key.secret ?? "",
    newAccount: () => runtime.runPromise(createAccount(`user-${crypto.randomUUID()}@test.local`)),
    seed: (effect) => runtime.runPromise(effect),
    fetch: (path, init) => fetch(url + path, init),
    saveCard: (accountId, card) => runtime.runPromise(Effect.flatMap(AutoReload, (autoReload) => autoReload.saveCard(accountId, card))),
    recordUsage: (records) =>
      runtime.runPromise(Effect.flatMap(UsageStore, (usage) => Effect.forEach(records, usage.record, { discard: true }))),
    postCredits: (entries) =>
      runtime.runPromise(Effect.flatMap(LedgerStore, (ledger) => Effect.forEach(entries, ledger.post, { discard: true }))),
    document: (kind, id) => runtime.runPromise(Effect.flatMap(DocumentStores, (stores) => stores.of(kind).get(id))),
    close: () => runtime.dispose()
  }
}
