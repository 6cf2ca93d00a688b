/** The order store contract on the in-memory store. */
import { OrderStoreMemory } from "@model-platform/memory-stores/MemoryOrderStore"
import { orderStoreContract } from "@model-platform/contract-kit/OrderContract"

orderStoreContract("OrderStoreMemory", OrderStoreMemory)
