/**
 * The import graph of the project's own code has no cycle: `npm run lint` runs this over apps/, packages/ and
 * scripts/ (`depcruise`), type-only imports included (they are parsed with swc, which keeps `import type`).
 * A cycle across packages counts as one within a package: workspace packages resolve to their sources (the
 * `@stampcard/source` export condition, README "Developing"), not to their build.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A module must not import itself back, by any path: move what both need below both.',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    parser: 'swc',
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['node_modules', '(^|/)dist/', '\\.d\\.ts$'] },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['@stampcard/source', 'import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.json'],
    },
  },
};
