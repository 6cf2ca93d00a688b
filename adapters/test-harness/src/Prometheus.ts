/**
 * Reads Prometheus' text exposition format (what GET /metrics answers): the samples, and the
 * families their `# TYPE` lines declare. Enough for tests to look a series up by name and labels.
 */

export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

export interface Exposition {
  readonly samples: ReadonlyArray<Sample>
  /** Metric family name -> type (counter, gauge, histogram...). */
  readonly types: ReadonlyMap<string, string>
  /** The samples named `name` whose labels include `labels`. */
  readonly find: (name: string, labels?: Readonly<Record<string, string>>) => ReadonlyArray<Sample>
  /** The one sample named `name` with exactly these labels among its labels, or undefined. */
  readonly value: (name: string, labels?: Readonly<Record<string, string>>) => number | undefined
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g

const parseValue = (text: string): number =>
  text === "+Inf" ? Infinity : text === "-Inf" ? -Infinity : text === "NaN" ? NaN : Number(text)

export const parseExposition = (text: string): Exposition => {
  const samples: Array<Sample> = []
  const types = new Map<string, string>()
  for (const line of text.split("\n")) {
    if (line.startsWith("# TYPE ")) {
      const [, , name, type] = line.split(" ")
      if (name !== undefined && type !== undefined) types.set(name, type)
      continue
    }
    if (line.startsWith("#") || line.trim() === "") continue
    const match = SAMPLE.exec(line)
    if (match === null) throw new Error(`not a Prometheus sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const label of (match[2] ?? "").matchAll(LABEL)) {
      labels[label[1]!] = label[2]!.replace(/\\n/g, "\n").replace(/\\"/g, "\"").replace(/\\\\/g, "\\")
    }
    samples.push({ name: match[1]!, labels, value: parseValue(match[3]!) })
  }
  const find = (name: string, labels: Readonly<Record<string, string>> = {}) =>
    samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  return {
    samples,
    types,
    find,
    value: (name, labels) => {
      const found = find(name, labels)
      if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`)
      return found[0]?.value
    }
  }
}
