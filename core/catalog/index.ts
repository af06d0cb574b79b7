// The catalog's public surface, for the daemon and the CLI.
export { Catalog, DEFAULT_CONTEXT_CAP, type CatalogModel, type CatalogOptions, type ModelSource } from './catalog.js';
export { ConfigStore, type ConfigStoreOptions, type ReloadResult } from './config/config-store.js';
export { defaultConfig, loadConfigFile, parseConfigText, type ConfigLoad, type LlmtrayConfig, type ModelConfig } from './config/load-config.js';
export type { EngineChoice, GpuLayers } from './config/schema.js';
export { parseDuration, parseSize } from './config/units.js';
export { definitionHash, type ModelDefinition } from './definition-hash.js';
export { discoverModels, type DiscoveredFile, type Discovery } from './discovery.js';
export { computeBufferBytes, estimateFootprint, kvBytesPerToken } from './footprint.js';
export { cachedMetadataReader, readGgufFacts, type GgufFacts, type MetadataReader, type MetadataResult } from './gguf-metadata.js';
export { configDir, configFilePath, currentPlatform, dataDir, defaultModelDirs, type PlatformFacts } from './paths.js';
export { watchCatalog, type CatalogWatcher, type CatalogWatchOptions } from './watch-catalog.js';
