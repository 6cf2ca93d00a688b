/**
 * The route order: which machine an unscoped call for a model goes to first.
 * Healthy machines serving the model now come first, then higher score; the caller's preferred
 * region only breaks ties; otherwise the catalogue's order stands (the sort is stable).
 */
export type Health = "online" | "degraded" | "offline" | "unknown"

export interface RouteCandidate {
  readonly machine_id: string
  readonly region: string
  readonly health: Health
  /** Whether the machine is serving the model right now. */
  readonly serving: boolean
  readonly score: number
}

/** 0 is best: serving and online, then serving but degraded, then everything else. */
export const healthRank = (c: RouteCandidate): number =>
  !c.serving ? 2 : c.health === "online" ? 0 : c.health === "degraded" ? 1 : 2

export const orderRoutes = <C extends RouteCandidate>(
  candidates: ReadonlyArray<C>,
  preferredRegion?: string
): ReadonlyArray<C> =>
  candidates
    .map((candidate, index) => ({ candidate, index }))
    .sort((a, b) =>
      healthRank(a.candidate) - healthRank(b.candidate) ||
      b.candidate.score - a.candidate.score ||
      regionRank(a.candidate, preferredRegion) - regionRank(b.candidate, preferredRegion) ||
      a.index - b.index
    )
    .map(({ candidate }) => candidate)

const regionRank = (c: RouteCandidate, preferred: string | undefined): number =>
  preferred !== undefined && c.region === preferred ? 0 : 1
