/** The people store contract on the in-memory store. */
import { PeopleStoreMemory } from "../src/MemoryPeopleStore.ts"
import { peopleStoreContract } from "../src/PeopleContract.ts"

peopleStoreContract("PeopleStoreMemory", PeopleStoreMemory)
