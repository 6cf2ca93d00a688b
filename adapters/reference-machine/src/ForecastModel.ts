/**
 * `ref-forecast`: Holt's linear exponential smoothing with an additive damped trend
 * (ETS(A,Ad,N)), parameters fit by grid search on one-step-ahead squared error, normal
 * prediction quantiles whose spread grows with the horizon. See docs/reference-machine.md.
 */
import { ApiError, invalidInput } from "./Errors.ts"

/** Most history values used (the most recent ones). */
export const MAX_HISTORY = 512
/** Most steps forecast. */
export const MAX_HORIZON = 64
/** Quantile levels when the request names none. */
export const DEFAULT_QUANTILES: ReadonlyArray<number> = [0.1, 0.5, 0.9]

/** The search grid: smoothing of the level, of the trend (as a share of alpha), and damping. */
export const ALPHAS: ReadonlyArray<number> = Array.from({ length: 20 }, (_, i) => (i + 1) / 20)
export const BETAS: ReadonlyArray<number> = [0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8, 1]
export const PHIS: ReadonlyArray<number> = [1, 0.98, 0.95, 0.9, 0.8]

export interface ForecastRequest {
  readonly model: string
  readonly history: ReadonlyArray<number>
  readonly horizon: number
  readonly quantiles: ReadonlyArray<number>
  readonly frequencySeconds: number | undefined
}

export const parseForecastRequest = (body: Record<string, unknown>, model: string): ForecastRequest => {
  const h = body.history
  if (!Array.isArray(h) || h.length < 2 || !h.every((x) => typeof x === "number" && Number.isFinite(x))) {
    throw new ApiError(400, "invalid_history", "history must be an array of at least 2 finite numbers, oldest first", "history")
  }
  const horizon = body.horizon
  if (typeof horizon !== "number" || !Number.isSafeInteger(horizon) || horizon < 1 || horizon > MAX_HORIZON) {
    throw new ApiError(400, "invalid_horizon", `horizon must be an integer from 1 to ${MAX_HORIZON}`, "horizon")
  }
  let quantiles = DEFAULT_QUANTILES
  const q = body.quantiles
  if (q !== undefined && q !== null) {
    if (
      !Array.isArray(q) || q.length === 0 || q.length > 99 ||
      !q.every((x) => typeof x === "number" && x > 0 && x < 1)
    ) {
      throw invalidInput("quantiles", "quantiles must be 1 to 99 numbers, each strictly between 0 and 1")
    }
    quantiles = [...new Set(q as Array<number>)].sort((a, b) => a - b)
  }
  const f = body.frequency_seconds
  if (f !== undefined && f !== null && (typeof f !== "number" || !Number.isSafeInteger(f) || f < 1)) {
    throw invalidInput("frequency_seconds", "frequency_seconds must be an integer of at least 1")
  }
  return {
    model,
    history: (h as Array<number>).slice(-MAX_HISTORY),
    horizon,
    quantiles,
    frequencySeconds: typeof f === "number" ? f : undefined
  }
}

export interface HoltFit {
  readonly alpha: number
  /** Trend smoothing as a share of alpha (beta* in Hyndman's notation); the ETS beta is alpha * beta. */
  readonly beta: number
  readonly phi: number
  readonly level: number
  readonly trend: number
  /** Standard deviation of the one-step-ahead errors (0 when the history is too short to tell). */
  readonly sigma: number
  readonly sse: number
}

/**
 * Runs the damped-trend recursion from level y0 and trend y1 - y0; the squared one-step errors
 * from t = 2 on are summed (t = 1 is fit by construction of the initial trend). With `bound`,
 * stops as soon as the sum exceeds it.
 */
export const holt = (y: ReadonlyArray<number>, alpha: number, beta: number, phi: number, bound = Infinity) => {
  let level = y[0]!
  let trend = y[1]! - y[0]!
  let sse = 0
  const ab = alpha * beta
  for (let t = 1; t < y.length; t++) {
    const e = y[t]! - (level + phi * trend)
    if (t >= 2) {
      sse += e * e
      // Already worse than the best fit so far: stop (the result is then only a lower bound).
      if (sse > bound) return { level, trend, sse }
    }
    level = level + phi * trend + alpha * e
    trend = phi * trend + ab * e
  }
  return { level, trend, sse }
}

/** The grid point with the least one-step squared error (the first one on ties). */
export const fit = (y: ReadonlyArray<number>): HoltFit => {
  let best: HoltFit | undefined
  for (const phi of PHIS) {
    for (const alpha of ALPHAS) {
      for (const beta of BETAS) {
        const r = holt(y, alpha, beta, phi, best === undefined ? Infinity : best.sse)
        if (best === undefined || r.sse < best.sse) {
          best = { alpha, beta, phi, level: r.level, trend: r.trend, sse: r.sse, sigma: 0 }
        }
      }
    }
  }
  const m = y.length - 2
  return { ...best!, sigma: m > 0 ? Math.sqrt(best!.sse / m) : 0 }
}

/**
 * The inverse of the standard normal CDF, by Peter Acklam's rational approximation
 * (relative error below 1.15e-9).
 */
export const inverseNormal = (p: number): number => {
  const a = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239]
  const b = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1]
  const c = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783]
  const d = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416]
  const pLow = 0.02425
  if (p <= 0) return -Infinity
  if (p >= 1) return Infinity
  if (p < pLow) {
    const q = Math.sqrt(-2 * Math.log(p))
    return (((((c[0]! * q + c[1]!) * q + c[2]!) * q + c[3]!) * q + c[4]!) * q + c[5]!) /
      ((((d[0]! * q + d[1]!) * q + d[2]!) * q + d[3]!) * q + 1)
  }
  if (p <= 1 - pLow) {
    const q = p - 0.5
    const r = q * q
    return (((((a[0]! * r + a[1]!) * r + a[2]!) * r + a[3]!) * r + a[4]!) * r + a[5]!) * q /
      (((((b[0]! * r + b[1]!) * r + b[2]!) * r + b[3]!) * r + b[4]!) * r + 1)
  }
  const q = Math.sqrt(-2 * Math.log(1 - p))
  return -(((((c[0]! * q + c[1]!) * q + c[2]!) * q + c[3]!) * q + c[4]!) * q + c[5]!) /
    ((((d[0]! * q + d[1]!) * q + d[2]!) * q + d[3]!) * q + 1)
}

/**
 * Point forecasts and their standard deviations for steps 1..horizon:
 *   point_h = level + (phi + ... + phi^h) * trend
 *   var_h   = sigma^2 * (1 + sum_{j=1}^{h-1} (alpha + alpha*beta*(phi + ... + phi^j))^2)
 */
export const project = (f: HoltFit, horizon: number): { point: Array<number>; sd: Array<number> } => {
  const point: Array<number> = []
  const sd: Array<number> = []
  let phiSum = 0
  let phiPow = 1
  let acc = 1
  for (let h = 1; h <= horizon; h++) {
    // acc holds 1 + sum_{j=1}^{h-1} c_j^2, where c_j uses phiSum up to phi^j.
    phiPow *= f.phi
    const prevPhiSum = phiSum
    phiSum += phiPow
    if (h >= 2) {
      const cj = f.alpha + f.alpha * f.beta * prevPhiSum
      acc += cj * cj
    }
    point.push(f.level + phiSum * f.trend)
    sd.push(f.sigma * Math.sqrt(acc))
  }
  return { point, sd }
}

export const runForecast = (req: ForecastRequest): Record<string, unknown> => {
  const started = performance.now()
  const f = fit(req.history)
  const { point, sd } = project(f, req.horizon)
  const quantiles = req.quantiles.map((level) => {
    const z = inverseNormal(level)
    return point.map((p, i) => p + z * sd[i]!)
  })
  const body: Record<string, unknown> = {
    object: "forecast",
    model: req.model,
    history_used: req.history.length,
    point,
    quantile_levels: req.quantiles,
    quantiles,
    method: { name: "holt_damped_trend", alpha: f.alpha, beta: f.alpha * f.beta, phi: f.phi, sigma: f.sigma }
  }
  if (req.frequencySeconds !== undefined) body.frequency_seconds = req.frequencySeconds
  // Whole milliseconds: the platform's spec says integer or null.
  body.generation_time_ms = Math.round(performance.now() - started)
  return body
}
