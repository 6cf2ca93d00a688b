/** The gateway store contract on the in-memory stores (`GatewayStoreComposed` over them). */
import { gatewayStoreContract } from "@model-platform/contract-kit/GatewayStoreContract"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"

gatewayStoreContract("GatewayStoreComposed on the memory stores", MemoryPlatformStores)
