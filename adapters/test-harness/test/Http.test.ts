/** The shared HTTP suite through the in-process web handler on the memory stores. */
import { fixtureCatalogue } from "../src/Fixtures.ts"
import { boundarySuite } from "../src/BoundarySuite.ts"
import { giftCodesSuite } from "../src/GiftCodesSuite.ts"
import { platformHttpSuite } from "../src/HttpSuite.ts"
import { permissionMatrixSuite } from "../src/PermissionMatrix.ts"
import { billingAllowancesSuite } from "../src/BillingAllowancesSuite.ts"
import { billingLimitsSuite } from "../src/BillingLimitsSuite.ts"
import { startInProcess } from "../src/InProcess.ts"

platformHttpSuite("in-process, memory stores", () => startInProcess(fixtureCatalogue))

permissionMatrixSuite("in-process, memory stores", () => startInProcess(fixtureCatalogue))

giftCodesSuite("in-process, memory stores", () => startInProcess(fixtureCatalogue))

boundarySuite("in-process, memory stores", () => startInProcess(fixtureCatalogue))

billingLimitsSuite("in-process, memory stores", (catalogue) => startInProcess(catalogue))
billingAllowancesSuite("in-process, memory stores", (catalogue) => startInProcess(catalogue))
