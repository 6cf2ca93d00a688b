/** The stablecoin rail contract (StablecoinRailContract.ts) on the simulated chain: a transfer is delivered as it is sent. */
import { Context, Effect, Layer } from "effect"
import { Catalogue } from "@model-platform/core/catalogue"
import { Ledger, LedgerStore } from "@model-platform/core/ledger"
import { formatUnits, Orders, TestCardProcessor } from "@model-platform/core/payments"
import { Time } from "@model-platform/core/kernel"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import { LedgerStoreMemory } from "@model-platform/memory-stores/MemoryLedgerStore"
import { OrderStoreMemory } from "@model-platform/memory-stores/MemoryOrderStore"
import { PlanStoreMemory } from "@model-platform/memory-stores/MemoryPlanStore"
import { SimulatedChain } from "../src/SimulatedChain.ts"
import { stablecoinRailContract } from "../src/StablecoinRailContract.ts"

const catalogue = {
  ...fixtureCatalogue,
  payments: {
    ...fixtureCatalogue.payments,
    stablecoin: {
      processor: "simulated",
      options: [{ chain: "base", token: "USDC", decimals: 6 }, { chain: "base", token: "USDT", decimals: 6 }]
    }
  }
}

const services = Orders.layer.pipe(
  Layer.provideMerge(Ledger.layer),
  Layer.provideMerge(Layer.mergeAll(
    LedgerStoreMemory, OrderStoreMemory, PlanStoreMemory, Catalogue.layer(catalogue),
    TestCardProcessor.layer({ baseUrl: "https://platform.test" }), SimulatedChain.layer
  ))
)

stablecoinRailContract("the simulated rail", Effect.gen(function*() {
  const context = yield* Layer.build(services)
  const orders = Context.get(context, Orders)
  const chain = Context.get(context, SimulatedChain)
  return {
    chain: "base",
    orders,
    credits: (accountId) =>
      Effect.map(Context.get(context, LedgerStore).balances(accountId), (bs) => bs.reduce((n, b) => n + b.posted, 0n)),
    send: (to, token, amount) =>
      Effect.gen(function*() {
        const transfer = yield* chain.send({ chain: "base", token, to, amount: formatUnits(amount, 6), at: yield* Time.now })
        yield* Effect.orDie(orders.recordDeposit(transfer))
      }),
    deliver: Effect.void
  }
}))
