/**
 * docs/embedding.md "Serving the platform from another framework", as the page shows it (from the
 * line after this comment): Embedding.test.ts checks that the page shows exactly this, and runs it.
 */
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import { makePlatform, platformWebHandler } from "@model-platform/core/http"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"

/** The whole platform as a web handler: `handler(request)` answers, `dispose()` releases it. */
export const servePlatform = (catalogue: CatalogueConfig) =>
  platformWebHandler(makePlatform({
    catalogue,
    // Every store in memory; Layer.merge(MemoryPlatformStores, yours) puts yours in their place.
    stores: MemoryPlatformStores,
    // The framework gives each request its full URL: the links the platform hands out start with it.
    options: { requestUrlFromShell: true },
    // Made at the first start (no account yet), with its first key.
    owner: { email: "owner@example.com" }
  }))

/** What a framework's route does with each request: here, the owner asking for its balance. */
export const ownersBalance = async (catalogue: CatalogueConfig): Promise<unknown> => {
  const platform = await servePlatform(catalogue)
  try {
    // Bun.serve({ fetch: platform.handler }), Deno.serve(platform.handler) and a Hono route
    // (app.all("*", (c) => platform.handler(c.req.raw))) hand the framework's requests over the same way.
    const response = await platform.handler(new Request("https://platform.example.com/credits", {
      headers: { authorization: `Bearer ${platform.owner?.key.secret}` }
    }))
    return await response.json()
  } finally {
    await platform.dispose()
  }
}
