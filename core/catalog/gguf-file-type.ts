// general.file_type's names: llama.cpp's `llama_ftype` (include/llama.h), spelt as node-llama-cpp
// spells them ("MOSTLY_Q4_K_M"), so a model's facts read the same as when the catalog used its
// reader. A copy of 42 names is cheaper than importing node-llama-cpp into the daemon for them;
// a test holds it equal to node-llama-cpp's table.
const NAMES: readonly string[] = [
  'ALL_F32', 'MOSTLY_F16', 'MOSTLY_Q4_0', 'MOSTLY_Q4_1', 'MOSTLY_Q4_1_SOME_F16', 'MOSTLY_Q4_2',
  'MOSTLY_Q4_3', 'MOSTLY_Q8_0', 'MOSTLY_Q5_0', 'MOSTLY_Q5_1', 'MOSTLY_Q2_K', 'MOSTLY_Q3_K_S',
  'MOSTLY_Q3_K_M', 'MOSTLY_Q3_K_L', 'MOSTLY_Q4_K_S', 'MOSTLY_Q4_K_M', 'MOSTLY_Q5_K_S',
  'MOSTLY_Q5_K_M', 'MOSTLY_Q6_K', 'MOSTLY_IQ2_XXS', 'MOSTLY_IQ2_XS', 'MOSTLY_Q2_K_S',
  'MOSTLY_IQ3_XS', 'MOSTLY_IQ3_XXS', 'MOSTLY_IQ1_S', 'MOSTLY_IQ4_NL', 'MOSTLY_IQ3_S',
  'MOSTLY_IQ3_M', 'MOSTLY_IQ2_S', 'MOSTLY_IQ2_M', 'MOSTLY_IQ4_XS', 'MOSTLY_IQ1_M', 'MOSTLY_BF16',
  'MOSTLY_Q4_0_4_4', 'MOSTLY_Q4_0_4_8', 'MOSTLY_Q4_0_8_8', 'MOSTLY_TQ1_0', 'MOSTLY_TQ2_0',
  'MOSTLY_MXFP4_MOE', 'MOSTLY_NVFP4', 'MOSTLY_Q1_0', 'MOSTLY_Q2_0',
];

/** The name of a general.file_type number; "type N" for one newer than this table. */
export function fileTypeName(fileType: number): string {
  return NAMES[fileType] ?? `type ${fileType}`;
}
