// A GPU's device class: the key placement uses to decide which GPUs may share a layer split.
//
// Why a class at all: llama.cpp splits layers in proportion to each device's share, and the
// slowest device paces every token. Two RTX 4090s split well; a 4090 and a 3060 split at the
// 3060's speed, and across vendors (CUDA + ROCm, or Vulkan on both) not every build copes. So
// placement splits freely within a class and across classes only where a model allows it.
//
// The class is `vendor:model`, lowercase, words joined by '-': "nvidia:rtx-4090",
// "amd:rx-7900-xtx", "amd:mi300x", "intel:arc-a770", "apple:m2-max". It is derived from the
// best name any source gave the device, so the same card gets the same class whichever tool
// named it: nvidia-smi's and CUDA's "NVIDIA GeForce RTX 4090" and lspci's "AD102 [GeForce RTX
// 4090]" are all "nvidia:rtx-4090". Brand words that every card of a vendor carries (GeForce,
// Radeon, Instinct, Graphics, "(TM)") and the driver tags Vulkan appends ("(RADV NAVI31)") are
// dropped; everything else, including "Laptop" and the memory size, is kept, because a laptop
// 4090 and a desktop one, or an 80 GB and a 40 GB A100, are not interchangeable halves of a split.

/** The vendors the sources tell apart; 'other' for anything else (placement still keeps its model apart). */
export type VendorKey = 'nvidia' | 'amd' | 'intel' | 'apple' | 'mthreads' | 'other';

/**
 * The vendor a piece of text names: si's vendor string ("Advanced Micro Devices, Inc.
 * [AMD/ATI]"), a device name ("AMD Radeon RX 7900 XTX"), or both joined. 'other' when none.
 */
export function vendorKeyOf(text: string): VendorKey {
  if (/nvidia|geforce|quadro|tesla/i.test(text)) return 'nvidia';
  if (/advanced micro devices|\bamd\b|\bati\b|radeon|instinct/i.test(text)) return 'amd';
  if (/intel/i.test(text)) return 'intel';
  if (/apple/i.test(text)) return 'apple';
  if (/moore threads|\bmtt\b/i.test(text)) return 'mthreads';
  return 'other';
}

/** Words every card of a vendor carries, which say nothing about the model. */
const BRAND_WORDS = /\b(nvidia|geforce|amd|ati|radeon|instinct|intel|apple|corporation|graphics|gpu)\b/gi;
/** The vendor names alone, for names that are nothing but brand words ("AMD Radeon Graphics"). */
const VENDOR_WORDS = /\b(nvidia|amd|ati|intel|apple|corporation)\b/gi;

/**
 * The class of a device from its vendor and its name, e.g. ("NVIDIA Corporation",
 * "NVIDIA GeForce RTX 4090") → "nvidia:rtx-4090". Pure and total: an empty name gives
 * "vendor:unknown".
 */
export function deviceClassOf(vendor: string, name: string): string {
  const key = vendorKeyOf(`${vendor} ${name}`);
  return `${key}:${modelSlug(name)}`;
}

function modelSlug(name: string): string {
  let text = name.replace(/\((?:r|tm)\)/gi, ' ');
  // pci.ids style, as lspci and older rocm-smi print it: "Navi 31 [Radeon RX 7900 XT/7900 XTX]".
  // The bracket holds the marketing name; the chip code name before it is shared by several cards.
  const bracket = /\[([^\]]+)\]/.exec(text);
  if (bracket?.[1] !== undefined) text = bracket[1];
  // Vulkan appends the driver's tag: "AMD Radeon RX 7900 XTX (RADV NAVI31)", "Intel(R) Arc(tm) A770 Graphics (DG2)".
  for (let before = ''; before !== text; ) {
    before = text;
    text = text.replace(/\s*\([^()]*\)\s*$/, '');
  }
  const slug = slugify(text.replace(BRAND_WORDS, ' '));
  if (slug !== '') return slug;
  return slugify(text.replace(VENDOR_WORDS, ' ')) || 'unknown';
}

function slugify(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');
}
