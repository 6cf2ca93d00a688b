/** The order store contract on the in-memory store. */
import { OrderStoreMemory } from "@model-platform/memory-stores/MemoryOrderStore"
import { orderStoreContract } from "../src/OrderContract.ts"

orderStoreContract("OrderStoreMemory", OrderStoreMemory)
