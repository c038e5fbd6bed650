// A question's images in its turn: those just sent, with their bytes, and
// those of a restored history, whose bytes the host fetches by SHA-256
// (`mino/image`) when a thumbnail first needs them.
import type { HostMessage } from '../src/messages';
import { h, transcript } from './dom';
import { imageSize } from './format';
import { post } from './host';

/**
 * One thumbnail's image: a sent one (`dataUrl`) or a history one
 * (`HistoryImage`: `sha256`, or `unavailable` and why).
 */
export interface QuestionImage {
  name?: string;
  mimeType?: string;
  size?: number;
  dataUrl?: string;
  sha256?: string;
  unavailable?: string;
}

/** turnId → the images sent with its question, until its turn is shown. */
const sentImages = new Map<string, QuestionImage[]>();
/** sha256 → a `data:` URL, or `{ error }`, as the host answered; `null` while asked (bytes are kept, errors asked again). */
const historyImageData = new Map<string, string | { error: string } | null>();

/** The images of a question accepted before its turn is shown, kept for that turn. */
export function keepSentImages(turnId: string, shown: QuestionImage[]) {
  sentImages.set(turnId, shown);
}

export function takeSentImages(turnId: string): QuestionImage[] | null {
  const shown = sentImages.get(turnId);
  sentImages.delete(turnId);
  return shown || null;
}

/**
 * A question's images as thumbnails: sent ones with their bytes, history
 * ones (`HistoryImage`) asked for by SHA-256, an unavailable one as its
 * name, size and why.
 */
export function questionImages(images: QuestionImage[]): HTMLElement {
  const list = h('div', 'question-images');
  for (const image of images) {
    if (!image || typeof image !== 'object') continue;
    const name = typeof image.name === 'string' && image.name ? image.name : 'image';
    const size = typeof image.size === 'number' ? imageSize(image.size) : '';
    const fig = h('figure', 'question-image');
    fig.title = name + (size ? ' (' + size + ')' : '');
    if (typeof image.unavailable === 'string') {
      fig.classList.add('image-unavailable');
      fig.appendChild(h('span', 'image-missing', 'Image unavailable: ' + image.unavailable));
    } else {
      const img = h('img', 'image-thumb');
      img.alt = name;
      if (typeof image.dataUrl === 'string') img.src = image.dataUrl;
      else if (typeof image.sha256 === 'string') {
        img.dataset.sha256 = image.sha256;
        requestHistoryImage(image.sha256, img);
      }
      fig.appendChild(img);
    }
    fig.appendChild(h('figcaption', 'image-caption', name + (size ? ' · ' + size : '')));
    list.appendChild(fig);
  }
  return list;
}

function requestHistoryImage(sha256: string, img: HTMLImageElement) {
  const known = historyImageData.get(sha256);
  if (typeof known === 'string') img.src = known;
  // Not yet answered: the answer fills every thumbnail of it. One that
  // failed is asked for again (the server may be back).
  else if (known === undefined || (known && known.error)) {
    historyImageData.set(sha256, null);
    post({ type: 'image', sha256 });
  }
}

function showImageError(fig: HTMLElement | null, message: string) {
  if (!fig || fig.querySelector('.image-missing')) return;
  fig.classList.add('image-unavailable');
  const img = fig.querySelector('img');
  if (img) img.remove();
  fig.prepend(h('span', 'image-missing', 'Image unavailable: ' + message));
}

/** The host's answer to an `image` request: every thumbnail of that image is filled (or says why not). */
export function onImage(msg: Extract<HostMessage, { type: 'image' }>) {
  if (typeof msg.sha256 !== 'string') return;
  const ok = typeof msg.data === 'string' && /^image\/(png|jpeg|gif|webp)$/.test(String(msg.mimeType));
  const value = ok ? 'data:' + msg.mimeType + ';base64,' + msg.data : { error: msg.error || 'the server did not give it' };
  historyImageData.set(msg.sha256, value);
  for (const img of transcript.querySelectorAll<HTMLImageElement>('img.image-thumb')) {
    if (img.dataset.sha256 !== msg.sha256) continue;
    if (typeof value === 'string') img.src = value;
    else showImageError(img.closest('figure'), value.error);
  }
}
