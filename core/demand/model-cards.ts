// What Ollama's model routes tell of each model (core/router/ollama/models.ts), for the router's
// gateway, completing gateway.ts: the catalog's entry with its file's card (read by the catalog's
// card reader, injected: this folder reads no file itself), the snapshot's view of what is
// resident, and the idle TTL an app's `keep_alive` sets in the activity.
import { createHash } from 'node:crypto';
import type { Catalog, CatalogModel } from '../catalog/catalog.js';
import type { GgufCardReader } from '../catalog/gguf-card.js';
import { isResident } from '../contracts/model-status.js';
import type { Snapshot } from '../contracts/snapshot.js';
import type { ModelGateway, ResidentModel } from '../router/model-gateway.js';
import type { ModelActivity } from './activity.js';

type CardMethods = Required<Pick<ModelGateway, 'modelFacts' | 'describe' | 'residents' | 'keepAlive' | 'isPinned'>>;

export function modelCards(parts: {
  catalog: Pick<Catalog, 'models'>;
  readCard: GgufCardReader;
  snapshot: () => Snapshot;
  activity: Pick<ModelActivity, 'keepFor' | 'idleTtl' | 'lastUsedAt'>;
  /** Asks the controller to look again, so that a TTL just changed is seen. */
  trigger: () => void;
}): CardMethods {
  const modelById = (id: string): CatalogModel | undefined => parts.catalog.models().find((m) => m.id === id);
  return {
    modelFacts(modelId) {
      const model = modelById(modelId);
      return model === undefined ? undefined : { vision: model.projectorPath !== undefined, contextTokens: model.ctx };
    },
    async describe(modelId, { verbose }) {
      const model = modelById(modelId);
      if (model === undefined) return undefined;
      const { card, modifiedAt } = await parts.readCard(model.path, { verbose });
      // The quant-tagged hf.co/ alias discovery gives an HF cache file (core/catalog/discovery.ts): the name a pull of it was asked by.
      const hubName = model.aliases.find((alias) => /^hf\.co\/[^/:]+\/[^/:]+:[^/:]+$/i.test(alias));
      return {
        modelId: model.id,
        ...(hubName === undefined ? {} : { hubName }),
        sizeBytes: model.sizeBytes,
        modifiedAt,
        // Ollama's digest names a manifest; this one names the definition the catalog hashes (the file's identity and launch settings).
        digest: createHash('sha256').update(model.definitionHash).digest('hex'),
        contextTokens: model.ctx,
        vision: model.projectorPath !== undefined,
        embeddingsOnly: model.embeddings !== undefined,
        gguf: card,
      };
    },
    residents() {
      return parts
        .snapshot()
        .models.filter((view) => isResident(view.status.state))
        .map((view): ResidentModel => {
          const onDevices = view.placement?.devices.reduce((sum, device) => sum + device.bytes, 0) ?? 0;
          const ttl = parts.activity.idleTtl(view.id, modelById(view.id)?.idleTtlMs ?? 0);
          const lastUsed = parts.activity.lastUsedAt(view.id) ?? view.lastUsed;
          // Nothing unloads a pinned or busy model, nor one kept for ever.
          const stays = view.pinned || view.inFlight > 0 || ttl === Infinity || lastUsed === null;
          // Where it runs, as placed; before the placement is known (loading), what it measured, else its estimate at its level.
          const held = view.placement === null ? (view.measuredBytes ?? view.estimateBytes[view.status.level ?? 'full']) : onDevices + view.placement.hostBytes;
          return {
            modelId: view.id,
            sizeBytes: held,
            deviceBytes: view.placement?.kind === 'cpu' ? 0 : onDevices,
            expiresAt: stays ? null : lastUsed + ttl,
            contextTokens: view.contextTokens,
          };
        });
    },
    keepAlive(modelId, ttlMs) {
      parts.activity.keepFor(modelId, ttlMs);
      parts.trigger();
    },
    isPinned: (modelId) => parts.snapshot().models.find((view) => view.id === modelId)?.pinned ?? false,
  };
}
