/** The order store contract on the in-memory store. */
import { OrderStoreMemory } from "../src/MemoryOrderStore.ts"
import { orderStoreContract } from "../src/OrderContract.ts"

orderStoreContract("OrderStoreMemory", OrderStoreMemory)
