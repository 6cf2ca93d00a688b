/** The people store contract on the in-memory store. */
import { PeopleStoreMemory } from "@model-platform/memory-stores/MemoryPeopleStore"
import { peopleStoreContract } from "@model-platform/contract-kit/PeopleContract"

peopleStoreContract("PeopleStoreMemory", PeopleStoreMemory)
