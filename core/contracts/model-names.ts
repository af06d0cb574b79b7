// How a name a person or an app typed finds its model: the router's `model` field, the CLI's
// `llmtray pin NAME`, the admin API's `/api/models/NAME/...`, the tray. One function, so a name
// that one of them accepts is accepted by all (`Demo-Chat` used to reach the router's model
// and be refused by `llmtray pin`).
//
// The order: an exact id, then an exact alias, then either ignoring case. The catalog keeps
// names unique without regard to case (the config check refuses "Qwen" beside "qwen", and
// discovered ids avoid every configured name), so at most one model matches each pass.
// Pure: no imports, usable from the renderer as well.

/** Anything that carries a model's names: a catalog entry, a snapshot's ModelView. */
export interface NamedModel {
  id: string;
  aliases: readonly string[];
}

/** The model `name` means, by id or alias, exact first, then ignoring case; undefined when none. */
export function findModelByName<M extends NamedModel>(models: readonly M[], name: string): M | undefined {
  const exact = models.find((m) => m.id === name) ?? models.find((m) => m.aliases.includes(name));
  if (exact !== undefined) return exact;
  const lower = name.toLowerCase();
  return models.find((m) => m.id.toLowerCase() === lower || m.aliases.some((alias) => alias.toLowerCase() === lower));
}
