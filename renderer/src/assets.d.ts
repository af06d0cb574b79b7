// Vite turns a CSS import into a stylesheet file; the import itself has no value.
declare module '*.css';
