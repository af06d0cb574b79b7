// The admin layer's public API. See README.md for the data flow and the token hand-over.
export {
  AdminService,
  DEFAULT_SNAPSHOT_THROTTLE_MS,
  type AdminClock,
  type AdminListener,
  type AdminServiceOptions,
  type DiscreteAdminEvent,
  type ModelActions,
} from './admin-service.js';
export { createAdminHandler, type AdminHandler, type AdminHandlerOptions, type MetricsAccess } from './admin-http.js';
export { DEFAULT_LOG_FEED, LogFeed, type LogFeedOptions } from './log-feed.js';
export { ADMIN_TOKEN_FILE, ensureAdminToken, readAdminToken } from './admin-token.js';
export { PINS_FILE, PinStore, type PinStoreOptions } from './pin-store.js';
export { METRICS_CONTENT_TYPE, renderMetrics } from './metrics.js';
export { RequestHistograms } from './request-histograms.js';
export { DASHBOARD_CSP } from './static-files.js';
