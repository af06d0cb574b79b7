// Add model: search the Hugging Face Hub, open a repo, see each quant with how it would run on this
// machine (from the daemon's own placement, before anything is downloaded), pull one, follow it
// and cancel it. Everything it shows the daemon said (core/pull): this view decides nothing.
import { useState, type FormEvent } from 'react';
import { formatBytes } from '../format/format.js';
import { isFinished, type FitKind, type PullView } from '../../../core/contracts/hub/pulls.js';
import { useActions, useDashboard } from '../store/store-context.js';

const FIT_LABEL: Record<FitKind, string> = { whole: 'Whole on GPU', partial: 'Partly in RAM', cpu: 'CPU only', too_big: 'Too big', unknown: 'Not known' };

export function AddModelView() {
  const hits = useDashboard((state) => state.hubHits);
  const offer = useDashboard((state) => state.hubOffer);
  const busy = useDashboard((state) => state.hubBusy);
  const error = useDashboard((state) => state.hubError);
  const pulls = useDashboard((state) => state.pulls);
  const { searchHub, openRepo, startPull } = useActions();
  const [query, setQuery] = useState('');
  const submit = (event: FormEvent): void => {
    event.preventDefault();
    if (query.trim() !== '') void searchHub(query.trim());
  };
  const running = Object.values(pulls).sort((a, b) => b.startedAt - a.startedAt);
  return (
    <section className="add-model" aria-label="Add model">
      <form role="search" onSubmit={submit}>
        <label>
          Search the Hugging Face Hub for GGUF models{' '}
          <input type="search" value={query} onChange={(event) => setQuery(event.target.value)} placeholder="qwen2.5 0.5b" />
        </label>
        <button type="submit" className="button" disabled={busy}>
          Search
        </button>
      </form>
      {error !== null && (
        <p className="banner banner-bad" role="alert">
          {error}
        </p>
      )}
      {running.length > 0 && <PullList pulls={running} />}
      {hits !== null && offer === null && (
        <ul aria-label="Models found">
          {hits.length === 0 && <li className="muted">No GGUF model matches.</li>}
          {hits.map((hit) => (
            <li key={hit.repo}>
              <button type="button" className="button button-link" disabled={busy} onClick={() => void openRepo(hit.repo)}>
                {hit.repo}
              </button>{' '}
              <span className="muted">
                {hit.downloads.toLocaleString('en')} downloads{hit.gated ? ' · gated: needs HF_TOKEN' : ''}
              </span>
            </li>
          ))}
        </ul>
      )}
      {offer !== null && (
        <table aria-label={`Quants of ${offer.repo}`}>
          <caption>
            {offer.repo}
            {offer.projector !== undefined && ` · with its vision projector ${offer.projector.path} (${formatBytes(offer.projector.sizeBytes)})`}
          </caption>
          <thead>
            <tr>
              <th>Quant</th>
              <th>Size</th>
              <th>Here</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {offer.quants.map((quant) => (
              <tr key={quant.path}>
                <td>{quant.quant ?? quant.path}</td>
                <td>
                  {formatBytes(quant.sizeBytes)}
                  {quant.parts > 1 ? ` in ${quant.parts} parts` : ''}
                </td>
                <td>
                  <span className={`chip fit-${quant.fit}`}>{FIT_LABEL[quant.fit]}</span> <span className="muted">{quant.fitWords}</span>
                </td>
                <td>
                  <button type="button" className="button" aria-label={`Pull ${quant.pullAs}`} onClick={() => void startPull(quant.pullAs)}>
                    Pull
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function PullList({ pulls }: { pulls: readonly PullView[] }) {
  const { cancelPull } = useActions();
  return (
    <ul aria-label="Pulls">
      {pulls.map((pull) => (
        <li key={pull.id}>
          <strong>{pull.id}</strong>{' '}
          {pull.state === 'downloading' ? (
            <>
              <progress aria-label={`${pull.id} downloaded`} value={pull.receivedBytes} max={Math.max(1, pull.totalBytes)} /> {formatBytes(pull.receivedBytes)} of {formatBytes(pull.totalBytes)}
              {pull.bytesPerSecond > 0 && ` · ${formatBytes(pull.bytesPerSecond)}/s`}
              {pull.secondsLeft !== null && ` · ${pull.secondsLeft} s left`}
            </>
          ) : (
            <span>
              {pull.state}: {pull.message}
            </span>
          )}
          {!isFinished(pull) && (
            <button type="button" className="button button-link" aria-label={`Cancel the pull of ${pull.id}`} onClick={() => void cancelPull(pull.id)}>
              Cancel
            </button>
          )}
        </li>
      ))}
    </ul>
  );
}
